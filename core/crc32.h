// defines: triax::crc32_of, triax::file_crc32
//
// zlib's CRC-32 (the checksum of token files and checkpoint shards): cheap, and any tool can
// recompute it (Python: zlib.crc32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace triax {

uint32_t crc32_of(const void* data, size_t bytes);

/// CRC-32 of a whole file; `bytes` (if given) receives its size. Throws Error naming the path.
uint32_t file_crc32(const std::string& path, int64_t* bytes = nullptr);

}  // namespace triax
