// defines: triax::TokenFile, triax::write_token_file, triax::kTokenFileHeaderBytes
//
// A token file is a flat array of token ids behind a 64-byte header (all little-endian):
//   0  char[8]  magic "TRIAXTOK"
//   8  u32      format version (1)
//   12 u32      bytes per token (1 when vocab <= 256, 2 when <= 65536, else 4: Llama 3)
//   16 u64      number of tokens
//   24 u64      vocabulary size (256 for bytes)
//   32 u32      CRC-32 (zlib's) of the token bytes
//   36 ..63     zero
//   64 ..       the tokens
// It is memory-mapped when read, so every rank of a node shares one copy in the page cache and
// opening a large corpus costs nothing; a sample is a copy of a window. docs/data.md has the
// same description and a five-line Python reader.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace triax {

constexpr size_t kTokenFileHeaderBytes = 64;

/// Writes `tokens` (each < vocab) atomically. Throws Error naming the path on failure.
void write_token_file(const std::string& path, const std::vector<uint32_t>& tokens, int64_t vocab);

class TokenFile {
 public:
  /// Maps `path` read-only and validates its header, size and checksum; throws Error naming the
  /// file and what is wrong.
  explicit TokenFile(const std::string& path);
  ~TokenFile();
  TokenFile(TokenFile&& other) noexcept;
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;
  TokenFile& operator=(TokenFile&&) = delete;

  const std::string& path() const { return path_; }
  int64_t size() const { return count_; }
  int64_t vocab() const { return vocab_; }

  /// Tokens [offset, offset + count) as int64.
  torch::Tensor read(int64_t offset, int64_t count) const;

 private:
  std::string path_;
  const unsigned char* map_ = nullptr;
  size_t map_bytes_ = 0;
  int64_t count_ = 0;
  int64_t vocab_ = 0;
  int bytes_per_token_ = 1;
};

}  // namespace triax
