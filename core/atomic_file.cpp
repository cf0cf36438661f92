#include "core/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace triax {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), temporary_(path_ + ".tmp") {
  file_ = std::fopen(temporary_.c_str(), "wb");
  if (file_ == nullptr) throw Error(str(path_, ": cannot write: ", std::strerror(errno)));
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(temporary_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t bytes) {
  ok_ = ok_ && std::fwrite(data, 1, bytes, file_) == bytes;
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t bytes) {
  ok_ = ok_ && ::fseeko(file_, static_cast<off_t>(offset), SEEK_SET) == 0;
  write(data, bytes);
}

void AtomicFile::commit() {
  bool ok = ok_ && std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
  ok = (std::fclose(file_) == 0) && ok;
  file_ = nullptr;
  if (!ok || std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary_.c_str());
    throw Error(str(path_, ": write failed: ", std::strerror(error)));
  }
}

}  // namespace triax
