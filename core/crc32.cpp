#include "core/crc32.h"

#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <vector>

#include "core/error.h"

namespace triax {

uint32_t crc32_of(const void* data, size_t bytes) {
  const auto* at = static_cast<const unsigned char*>(data);
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t done = 0; done < bytes;) {  // zlib's length is a uInt: feed it in pieces
    const size_t piece = std::min<size_t>(bytes - done, 1u << 30);
    crc = crc32(crc, at + done, static_cast<uInt>(piece));
    done += piece;
  }
  return static_cast<uint32_t>(crc);
}

uint32_t file_crc32(const std::string& path, int64_t* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str(path, ": cannot open"));
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<char> buffer(1 << 20);
  int64_t total = 0;
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = in.gcount();
    crc = crc32(crc, reinterpret_cast<const unsigned char*>(buffer.data()), static_cast<uInt>(got));
    total += got;
  }
  if (bytes != nullptr) *bytes = total;
  return static_cast<uint32_t>(crc);
}

}  // namespace triax
