#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/strings.h"
#include "data/distributed_sampler.h"

using triax::DistributedSampler;
using triax::DistributedSamplerOptions;

namespace {

std::vector<int64_t> indices_of(int64_t n, int replicas, int rank, bool shuffle, int64_t seed,
                                int64_t epoch, bool drop_last) {
  DistributedSampler sampler(
      DistributedSamplerOptions{n, replicas, rank, shuffle, seed, drop_last});
  sampler.set_epoch(epoch);
  return sampler.indices();
}

}  // namespace

TEST_CASE("without shuffle, ranks take strided indices", "[sampler]") {
  CHECK(indices_of(10, 3, 0, false, 0, 0, false) == std::vector<int64_t>{0, 3, 6, 9});
  CHECK(indices_of(10, 3, 1, false, 0, 0, false) == std::vector<int64_t>{1, 4, 7, 0});  // padded
  CHECK(indices_of(10, 3, 2, false, 0, 0, false) == std::vector<int64_t>{2, 5, 8, 1});
  CHECK(indices_of(10, 3, 2, false, 0, 0, true) == std::vector<int64_t>{2, 5, 8});  // tail dropped
  CHECK(indices_of(2, 5, 4, false, 0, 0, false) == std::vector<int64_t>{0});        // padding > n
}

TEST_CASE("a shuffled epoch is a permutation, different per epoch, equal per seed", "[sampler]") {
  const auto a = indices_of(100, 1, 0, true, 7, 0, false);
  std::set<int64_t> unique(a.begin(), a.end());
  CHECK(unique.size() == 100);
  CHECK(a != indices_of(100, 1, 0, true, 7, 1, false));
  CHECK(a == indices_of(100, 1, 0, true, 7, 0, false));
}

TEST_CASE("the ranks' local batches make up the sequential global batch", "[sampler]") {
  // Note [Global batch equivalence]: for every step, the union of the dp ranks' k-th local
  // batches is the k-th global batch of the one-rank order, shuffles included.
  const int64_t n = 1000;
  const int64_t global_batch = 48;
  for (int dp : {1, 2, 3, 4, 8}) {
    if (global_batch % dp != 0) continue;
    const int64_t local = global_batch / dp;
    const auto sequential = indices_of(n, 1, 0, true, 3, 2, false);
    std::vector<std::vector<int64_t>> per_rank;
    for (int r = 0; r < dp; ++r) per_rank.push_back(indices_of(n, dp, r, true, 3, 2, false));
    for (int64_t step = 0; step < n / global_batch; ++step) {
      std::multiset<int64_t> expected(sequential.begin() + step * global_batch,
                                      sequential.begin() + (step + 1) * global_batch);
      std::multiset<int64_t> got;
      for (const auto& mine : per_rank) {
        got.insert(mine.begin() + step * local, mine.begin() + (step + 1) * local);
      }
      INFO("dp=" << dp << " step=" << step);
      REQUIRE(got == expected);
    }
  }
}

TEST_CASE("matches PyTorch's DistributedSampler exactly", "[sampler][python]") {
  const char* python = "/usr/bin/python3";
  const char* source = std::getenv("TRIAX_SOURCE_DIR");
  if (source == nullptr ||
      std::system(triax::str(python, " -c 'import torch' 2>/dev/null").c_str()) != 0) {
    WARN("SKIPPED: needs TRIAX_SOURCE_DIR and /usr/bin/python3 with torch (python3-torch)");
    return;
  }
  struct Case {
    int64_t n;
    int replicas, rank;
    bool shuffle;
    int64_t seed, epoch;
    bool drop_last;
  };
  const std::vector<Case> cases = {
      {10, 3, 1, false, 0, 0, false},  {60000, 4, 3, true, 1234, 0, false},
      {1001, 4, 2, true, 5, 3, false}, {1001, 4, 2, true, 5, 3, true},
      {7, 2, 0, true, 0, 1, false},    {3, 5, 4, true, 9, 0, false}};
  std::ostringstream command;
  command << python << " " << source << "/tests/data/reference_sampler.py";
  for (const auto& c : cases) {
    command << " " << c.n << "," << c.replicas << "," << c.rank << "," << c.shuffle << "," << c.seed
            << "," << c.epoch << "," << c.drop_last;
  }
  FILE* pipe = popen(command.str().c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[65536];
  size_t got = 0;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, got);
  REQUIRE(pclose(pipe) == 0);
  std::istringstream lines(output);
  for (const auto& c : cases) {
    std::string line;
    REQUIRE(std::getline(lines, line));
    std::istringstream numbers(line);
    std::vector<int64_t> expected;
    for (int64_t i = 0; numbers >> i;) expected.push_back(i);
    INFO("n=" << c.n << " replicas=" << c.replicas << " rank=" << c.rank << " shuffle=" << c.shuffle
              << " epoch=" << c.epoch << " drop_last=" << c.drop_last);
    CHECK(indices_of(c.n, c.replicas, c.rank, c.shuffle, c.seed, c.epoch, c.drop_last) == expected);
  }
}

TEST_CASE("the block deal gives rank r the r-th contiguous block of a global batch", "[sampler]") {
  const torch::Tensor global = torch::arange(12, torch::kLong).view({12, 1});
  torch::Tensor joined = torch::cat({DistributedSampler::block_rows(global, 0, 3),
                                     DistributedSampler::block_rows(global, 1, 3),
                                     DistributedSampler::block_rows(global, 2, 3)});
  CHECK(torch::equal(joined, global));
  CHECK_THROWS(DistributedSampler::block_rows(global, 0, 5));
}
