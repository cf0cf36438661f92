// defines: triax::AtomicFile
//
// A file that appears whole or not at all: bytes go to PATH.tmp, which commit() fsyncs and
// renames over PATH (rename is atomic on POSIX file systems). A writer that dies before commit()
// leaves PATH as it was; the destructor of an uncommitted file removes the temporary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace triax {

class AtomicFile {
 public:
  /// Opens PATH.tmp for writing; throws Error naming `path` when it cannot.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes);
  /// Writes at byte `offset` of the file (past its end: the gap reads as zeros until written).
  void write_at(uint64_t offset, const void* data, size_t bytes);
  /// Flushes, fsyncs and renames into place; throws Error naming the path on any failure.
  void commit();

 private:
  std::string path_;
  std::string temporary_;
  std::FILE* file_ = nullptr;
  bool ok_ = true;
};

}  // namespace triax
