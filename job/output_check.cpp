#include "job/output_check.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace triax {
namespace {

namespace fs = std::filesystem;

// Creates `dir` and writes (then removes) a probe file in it; "" when that works, else why not.
std::string probe(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return str("cannot create it: ", ec.message());
  const std::string file = str(dir, "/.triax-write-probe-", ::getpid());
  std::FILE* f = std::fopen(file.c_str(), "w");
  if (f == nullptr) return str("cannot write in it: ", std::strerror(errno));
  const bool ok = std::fputs("probe\n", f) >= 0 && std::fflush(f) == 0;
  const int error = errno;
  std::fclose(f);
  std::remove(file.c_str());
  return ok ? "" : str("cannot write in it: ", std::strerror(error));
}

void require(const char* key, const std::string& dir, const std::string& shown) {
  if (dir.empty()) return;
  const std::string why = probe(dir);
  if (!why.empty()) {
    throw ConfigError(
        str(key, ": '", shown, "': ", why, " (valid: a folder this user can create and write)"));
  }
}

}  // namespace

void check_outputs_writable(const Config& config) {
  require("run.dir", config.run.dir, config.run.dir);
  if (!config.checkpoint.dir.empty()) {
    require("checkpoint.dir", config.checkpoint.dir, config.checkpoint.dir);
  }
  const std::string& trace = config.schedule.trace;
  if (!trace.empty()) {
    if (fs::is_directory(trace)) {
      throw ConfigError(str("schedule.trace: '", trace,
                            "' is a folder (valid: a file path, e.g. runs/x/trace.json)"));
    }
    const fs::path parent = fs::path(trace).parent_path();
    require("schedule.trace", parent.empty() ? "." : parent.string(), trace);
  }
}

void check_written(std::ostream& stream, const std::string& path, const char* what) {
  stream.flush();
  if (stream) return;
  throw Error(str(path, ": cannot write ", what, ": ",
                  errno != 0 ? std::strerror(errno) : "the stream failed",
                  " (a full disk or an I/O error; nothing after this point was recorded)"));
}

}  // namespace triax
