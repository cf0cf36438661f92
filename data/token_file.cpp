#include "data/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/atomic_file.h"
#include "core/crc32.h"
#include "core/error.h"

namespace triax {
namespace {

constexpr char kMagic[8] = {'T', 'R', 'I', 'A', 'X', 'T', 'O', 'K'};
constexpr uint32_t kVersion = 1;

void put(unsigned char* at, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) at[i] = static_cast<unsigned char>(value >> (8 * i));
}

uint64_t get(const unsigned char* at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{at[i]} << (8 * i);
  return value;
}

}  // namespace

void write_token_file(const std::string& path, const std::vector<uint32_t>& tokens, int64_t vocab) {
  TRIAX_CHECK(vocab >= 1 && vocab <= (int64_t{1} << 32), path, ": vocabulary ", vocab,
              " (valid: 1 to 2^32)");
  const int width = vocab <= 256 ? 1 : vocab <= 65536 ? 2 : 4;
  std::vector<unsigned char> body(tokens.size() * static_cast<size_t>(width));
  for (size_t i = 0; i < tokens.size(); ++i) {
    TRIAX_CHECK(tokens[i] < vocab, path, ": token ", tokens[i], " at ", i, " is >= vocab ", vocab);
    put(&body[i * static_cast<size_t>(width)], tokens[i], width);
  }
  unsigned char header[kTokenFileHeaderBytes] = {};
  std::memcpy(header, kMagic, 8);
  put(header + 8, kVersion, 4);
  put(header + 12, static_cast<uint64_t>(width), 4);
  put(header + 16, tokens.size(), 8);
  put(header + 24, static_cast<uint64_t>(vocab), 8);
  put(header + 32, crc32_of(body.data(), body.size()), 4);
  AtomicFile out(path);
  out.write(header, sizeof(header));
  out.write(body.data(), body.size());
  out.commit();
}

TokenFile::TokenFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error(str(path, ": cannot open: ", std::strerror(errno)));
  struct stat info {};
  ::fstat(fd, &info);
  map_bytes_ = static_cast<size_t>(info.st_size);
  if (map_bytes_ < kTokenFileHeaderBytes) {
    ::close(fd);
    throw Error(str(path, ": ", map_bytes_, " bytes is too short for a token file (header is ",
                    kTokenFileHeaderBytes, " bytes); rewrite it with triax prepare-data"));
  }
  void* map = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw Error(str(path, ": cannot map: ", std::strerror(errno)));
  map_ = static_cast<const unsigned char*>(map);
  try {
    if (std::memcmp(map_, kMagic, 8) != 0) {
      throw Error(str(path,
                      ": not a triax token file (no TRIAXTOK magic); write one with "
                      "triax prepare-data"));
    }
    const uint64_t version = get(map_ + 8, 4);
    if (version != kVersion) {
      throw Error(
          str(path, ": token file format version ", version, " (this triax reads ", kVersion, ")"));
    }
    bytes_per_token_ = static_cast<int>(get(map_ + 12, 4));
    count_ = static_cast<int64_t>(get(map_ + 16, 8));
    vocab_ = static_cast<int64_t>(get(map_ + 24, 8));
    if (bytes_per_token_ != 1 && bytes_per_token_ != 2 && bytes_per_token_ != 4) {
      throw Error(str(path, ": ", bytes_per_token_, " bytes per token (valid: 1, 2 or 4)"));
    }
    // A count too large to multiply would wrap the product round, even to the file's own size
    // (found by fuzz_token_file): refused before the size check below.
    const uint64_t most =
        (UINT64_MAX - kTokenFileHeaderBytes) / static_cast<uint64_t>(bytes_per_token_);
    if (count_ < 0 || static_cast<uint64_t>(count_) > most) {
      throw Error(str(path, ": the header promises ", static_cast<uint64_t>(count_),
                      " tokens, more than any file holds (not written by triax prepare-data)"));
    }
    const size_t expected =
        kTokenFileHeaderBytes + static_cast<size_t>(count_) * static_cast<size_t>(bytes_per_token_);
    if (map_bytes_ != expected) {
      throw Error(str(path, ": ", map_bytes_, " bytes but the header promises ", expected,
                      " (truncated or appended to)"));
    }
    const uint32_t stored = static_cast<uint32_t>(get(map_ + 32, 4));
    const uint32_t actual =
        crc32_of(map_ + kTokenFileHeaderBytes, expected - kTokenFileHeaderBytes);
    if (stored != actual) {
      throw Error(str(path, ": checksum mismatch (header ", stored, ", data ", actual,
                      "); the file is corrupt, rewrite it with triax prepare-data"));
    }
  } catch (...) {
    ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
    map_ = nullptr;
    throw;
  }
}

TokenFile::TokenFile(TokenFile&& other) noexcept
    : path_(std::move(other.path_)),
      map_(other.map_),
      map_bytes_(other.map_bytes_),
      count_(other.count_),
      vocab_(other.vocab_),
      bytes_per_token_(other.bytes_per_token_) {
  other.map_ = nullptr;
}

TokenFile::~TokenFile() {
  if (map_ != nullptr) ::munmap(const_cast<unsigned char*>(map_), map_bytes_);
}

torch::Tensor TokenFile::read(int64_t offset, int64_t count) const {
  TRIAX_CHECK(offset >= 0 && count >= 0 && offset + count <= count_, path_, ": tokens [", offset,
              ", ", offset + count, ") are outside [0, ", count_, ")");
  const unsigned char* begin = map_ + kTokenFileHeaderBytes + offset * bytes_per_token_;
  if (bytes_per_token_ == 1) {
    return torch::from_blob(const_cast<unsigned char*>(begin), {count}, torch::kUInt8)
        .to(torch::kLong);
  }
  torch::Tensor out = torch::empty({count}, torch::kLong);
  int64_t* dst = out.data_ptr<int64_t>();
  const int width = bytes_per_token_;
  for (int64_t i = 0; i < count; ++i) dst[i] = static_cast<int64_t>(get(begin + width * i, width));
  return out;
}

}  // namespace triax
