// defines: triax::fuzz::InputFile, triax::fuzz::require_named
//
// What every fuzz target here shares: the readers under test read files (the code path users
// run), so each input is written to a file of the name the reader expects, in a folder of its
// own; and a refusal must name that file (the project's rule for outside bytes), so an error
// whose message lacks the path is a finding, like a crash.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

namespace triax::fuzz {

class InputFile {
 public:
  InputFile(const std::string& name, const uint8_t* data, size_t size) {
    dir_ = "/tmp/triax-fuzz-" + std::to_string(::getpid());
    std::string mkdir = dir_;
    ::mkdir(mkdir.c_str(), 0700);
    path_ = dir_ + "/" + name;
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::string path_;
};

/// Aborts (a finding) unless `error`'s message names `what` (the file or folder).
inline void require_named(const std::exception& error, const std::string& what) {
  if (std::string(error.what()).find(what) != std::string::npos) return;
  std::fprintf(stderr, "refusal without the file's name (%s): %s\n", what.c_str(), error.what());
  std::abort();
}

}  // namespace triax::fuzz
