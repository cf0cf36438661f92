// Safetensors headers are outside bytes (issue 30): a header that is well-formed JSON (whose
// checksum a manifest would accept) but describes impossible tensors must be refused by both
// readers, before anything is allocated or mapped, with the file, the tensor and the defect
// named — never a LibTorch stack trace, an allocation of petabytes, or a read past the file.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/safetensors_map.h"

using namespace triax;

namespace {

// A file of `data_bytes` zero bytes after `header`.
std::string write_file(const std::string& name, const std::string& header, size_t data_bytes) {
  const auto path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream out(path, std::ios::binary);
  const uint64_t size = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((size >> (8 * i)) & 0xff));
  out << header << std::string(data_bytes, '\0');
  return path;
}

void refused_by_both(const std::string& header, size_t data_bytes, const std::string& defect) {
  INFO(header);
  const std::string path = write_file("triax_bad.safetensors", header, data_bytes);
  CHECK_THROWS_WITH(load_safetensors(path),
                    Catch::Contains(path) && Catch::Contains("'w'") && Catch::Contains(defect));
  CHECK_THROWS_WITH(SafetensorsMap(path),
                    Catch::Contains(path) && Catch::Contains("'w'") && Catch::Contains(defect));
  std::filesystem::remove(path);
}

}  // namespace

TEST_CASE("safetensors headers describing impossible tensors are refused by name",
          "[safetensors]") {
  refused_by_both(R"({"w":{"dtype":"F32","shape":[-1,4],"data_offsets":[0,16]}})", 16,
                  "negative dimension");
  refused_by_both(R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,16]}})",
                  16, "more elements than 64 bits count");
  refused_by_both(R"({"w":{"dtype":"F32","shape":[2305843009213693952],"data_offsets":[0,8]}})", 8,
                  "more bytes than 64 bits count");
  refused_by_both(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8000]}})", 8,
                  "outside the file");
  refused_by_both(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", 8,
                  "outside the file");
  refused_by_both(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 16, "spans 8 bytes");
  refused_by_both(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8,
                  "must be [begin, end]");
  refused_by_both(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8, "no \"shape\"");
  refused_by_both(R"({"w":{"dtype":"F32","shape":"two","data_offsets":[0,8]}})", 8,
                  "\"shape\" is not what safetensors puts there");
  refused_by_both(R"({"w":[1,2]})", 8, "no \"dtype\"");
}

TEST_CASE("a well-formed safetensors file still reads", "[safetensors]") {
  const std::string path = write_file(
      "triax_good.safetensors", R"({"w":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]}})", 8);
  const SafetensorsFile file = load_safetensors(path);
  REQUIRE(file.tensors.size() == 1);
  CHECK(file.tensors[0].second.sizes() == torch::IntArrayRef({2, 1}));
  SafetensorsMap map(path);
  CHECK(map.names() == std::vector<std::string>{"w"});
  std::filesystem::remove(path);
}
