// The token file format: written, mapped back, and refused with a clear message when damaged.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/token_file.h"
#include "data/token_sequences.h"

using Catch::Contains;
using namespace triax;

namespace {

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / "triax-test-token-file";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

void poke(const std::string& path, std::streamoff offset, char value) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  f.put(value);
}

}  // namespace

TEST_CASE("one-, two- and four-byte token files round-trip", "[token_file]") {
  const std::string bytes = temp_path("bytes.tok");
  write_token_file(bytes, {72, 105, 0, 255}, 256);
  CHECK(std::filesystem::file_size(bytes) == kTokenFileHeaderBytes + 4);
  TokenFile small(bytes);
  CHECK(small.size() == 4);
  CHECK(small.vocab() == 256);
  CHECK(torch::equal(small.read(0, 4), torch::tensor({72, 105, 0, 255}, torch::kLong)));
  CHECK(torch::equal(small.read(1, 2), torch::tensor({105, 0}, torch::kLong)));
  CHECK_THROWS_WITH(small.read(3, 2), Contains("outside [0, 4)"));

  const std::string wide = temp_path("wide.tok");
  write_token_file(wide, {1000, 7, 50256}, 50257);
  TokenFile large(wide);
  CHECK(std::filesystem::file_size(wide) == kTokenFileHeaderBytes + 6);
  CHECK(torch::equal(large.read(0, 3), torch::tensor({1000, 7, 50256}, torch::kLong)));
  CHECK_THROWS_WITH(write_token_file(temp_path("bad.tok"), {300}, 256), Contains(">= vocab 256"));

  const std::string widest = temp_path("widest.tok");  // Llama 3's 128256 ids need 4 bytes
  write_token_file(widest, {128000, 5, 128255}, 128256);
  CHECK(std::filesystem::file_size(widest) == kTokenFileHeaderBytes + 12);
  CHECK(
      torch::equal(TokenFile(widest).read(0, 3), torch::tensor({128000, 5, 128255}, torch::kLong)));
}

TEST_CASE("a damaged token file names the file and the damage", "[token_file]") {
  const std::string path = temp_path("damaged.tok");
  write_token_file(path, std::vector<uint32_t>(100, 65), 256);
  poke(path, kTokenFileHeaderBytes + 10, 'B');
  CHECK_THROWS_WITH(TokenFile(path), Contains(path) && Contains("checksum mismatch"));

  write_token_file(path, std::vector<uint32_t>(100, 65), 256);
  std::filesystem::resize_file(path, kTokenFileHeaderBytes + 50);
  CHECK_THROWS_WITH(TokenFile(path), Contains("114 bytes but the header promises 164"));

  // A count whose bytes wrap round 2^64 to the file's own size (fuzz_token_file found it): 2^62
  // four-byte tokens.
  const std::string wrapping = temp_path("wrapping.tok");
  write_token_file(wrapping, {}, 128256);
  for (int i = 16; i < 23; ++i) poke(wrapping, i, 0);
  poke(wrapping, 23, 0x40);
  CHECK_THROWS_WITH(TokenFile(wrapping),
                    Contains(wrapping) && Contains("promises 4611686018427387904 tokens"));

  poke(path, 0, 'X');
  CHECK_THROWS_WITH(TokenFile(path), Contains("not a triax token file"));
  CHECK_THROWS_WITH(TokenFile(temp_path("missing.tok")), Contains("cannot open"));
}

TEST_CASE("token sequences are windows of seq_len + 1 sharing one token", "[token_file]") {
  const std::string path = temp_path("seq.tok");
  std::vector<uint32_t> tokens(10);
  for (uint16_t i = 0; i < 10; ++i) tokens[i] = i;
  write_token_file(path, tokens, 256);
  const TokenSequences sequences(path, 3, 256);
  CHECK(sequences.size() == 3);  // (10 - 1) / 3
  const int64_t order[] = {2, 0};
  CHECK(torch::equal(sequences.batch(order, 2),
                     torch::tensor({6, 7, 8, 9, 0, 1, 2, 3}, torch::kLong).view({2, 4})));
  CHECK_THROWS_WITH(TokenSequences(path, 10, 256), Contains("model.seq_len: 10 needs 11 tokens"));
  CHECK_THROWS_WITH(TokenSequences(path, 3, 100), Contains("model.vocab: 100 is smaller"));
}
