// assign_servers (parallel/ps/server_shards.h): K contiguous runs of the parameters, each whole,
// none empty, the cuts nearest equal shares of the bytes.
#include <catch2/catch.hpp>

#include <numeric>

#include "parallel/ps/server_shards.h"

namespace triax {
namespace {

// Each server's bytes under `servers`.
std::vector<int64_t> loads(const std::vector<int64_t>& bytes, const std::vector<int>& servers,
                           int k) {
  std::vector<int64_t> load(static_cast<size_t>(k), 0);
  for (size_t i = 0; i < bytes.size(); ++i) load[static_cast<size_t>(servers[i])] += bytes[i];
  return load;
}

}  // namespace

TEST_CASE("assign_servers cuts contiguous, non-empty runs nearest equal shares", "[ps]") {
  const std::vector<int64_t> bytes{400, 100, 100, 100, 100, 400, 100, 100, 100, 100};
  for (int k = 1; k <= static_cast<int>(bytes.size()); ++k) {
    const std::vector<int> s = assign_servers(bytes, k);
    REQUIRE(s.size() == bytes.size());
    CHECK(s.front() == 0);
    CHECK(s.back() == k - 1);
    for (size_t i = 1; i < s.size(); ++i) CHECK((s[i] == s[i - 1] || s[i] == s[i - 1] + 1));
  }
  // Two servers: 800 bytes each side of the cut after the fifth tensor.
  CHECK(loads(bytes, assign_servers(bytes, 2), 2) == std::vector<int64_t>{800, 800});
  // A transformer's buckets: the embedding first, then equal blocks.
  std::vector<int64_t> model{1000};
  for (int b = 0; b < 8; ++b) model.push_back(250);
  CHECK(loads(model, assign_servers(model, 3), 3) == std::vector<int64_t>{1000, 1000, 1000});
  CHECK(loads(model, assign_servers(model, 2), 2) == std::vector<int64_t>{1500, 1500});
  // One server per tensor when there are as many servers as tensors.
  const std::vector<int> each = assign_servers(bytes, 10);
  for (int i = 0; i < 10; ++i) CHECK(each[static_cast<size_t>(i)] == i);
}

TEST_CASE("assign_servers refuses more servers than parameter tensors", "[ps]") {
  CHECK_THROWS_WITH(assign_servers({4, 4}, 3), Catch::Contains("3 servers for 2 parameters"));
}

}  // namespace triax
