// The tree all-reduce (Note [Tree all-reduce]): bit for bit the one-process tree_sum of every
// rank's tensor, on every rank, at every group size CTest runs (1, 2, 4, 8) and at the sizes
// that are not powers of two (sub-groups of 3, 5, 6 and 7 ranks split from the world), with
// values whose sum depends on the association; and tree_sum's association itself.
#include <catch2/catch.hpp>

#include <cstring>

#include "parallel/comm/tree_all_reduce.h"
#include "support/test_world.h"

namespace {

// Rank r's tensor: values spread over many binades, so that another association of the same
// numbers gives other bits (checked below against a running sum).
torch::Tensor part_of(int rank, int64_t numel, torch::Dtype dtype) {
  torch::manual_seed(1000 + rank);
  const torch::Tensor scale = torch::pow(10.0, torch::randint(-4, 5, {numel}, torch::kDouble));
  return (torch::randn({numel}, torch::kDouble) * scale).to(dtype);
}

bool bitwise_equal(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

void check_group(triax::Communicator& comm, int64_t numel, torch::Dtype dtype) {
  INFO("group of " << comm.size() << ", " << numel << " elements, " << dtype);
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < comm.size(); ++r) parts.push_back(part_of(r, numel, dtype));
  torch::Tensor mine = parts[static_cast<size_t>(comm.rank())].clone();
  triax::tree_all_reduce(comm, mine);
  CHECK(bitwise_equal(mine, triax::tree_sum(parts)));
  if (comm.size() >= 3 && numel >= 1000) {
    // The data tells associations apart: the running sum from the last rank down differs.
    torch::Tensor reversed = parts.back().clone();
    for (size_t r = parts.size() - 1; r-- > 0;) reversed = reversed + parts[r];
    CHECK_FALSE(bitwise_equal(mine, reversed));
  }
  // The same bits on every rank: gathered, every row equals rank 0's.
  const torch::Tensor all = comm.all_gather(mine.unsqueeze(0));
  for (int r = 1; r < comm.size(); ++r) CHECK(bitwise_equal(all[r], all[0]));
}

}  // namespace

TEST_CASE("tree_sum associates as the left-balanced tree over its parts", "[comm_tree]") {
  std::vector<torch::Tensor> p;
  for (int r = 0; r < 7; ++r) p.push_back(part_of(r, 4096, torch::kFloat));
  const auto sum = [&](size_t n) { return triax::tree_sum({p.begin(), p.begin() + n}); };
  CHECK(bitwise_equal(sum(1), p[0]));
  CHECK(bitwise_equal(sum(2), p[0] + p[1]));
  CHECK(bitwise_equal(sum(3), (p[0] + p[1]) + p[2]));
  CHECK(bitwise_equal(sum(4), (p[0] + p[1]) + (p[2] + p[3])));
  CHECK(bitwise_equal(sum(6), ((p[0] + p[1]) + (p[2] + p[3])) + (p[4] + p[5])));
  CHECK(bitwise_equal(sum(7), ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + p[6])));
  // The association shows in the bits: a running sum of the same parts differs somewhere.
  const torch::Tensor running = (((p[0] + p[1]) + p[2]) + p[3]);
  CHECK_FALSE(bitwise_equal(sum(4), running));
}

TEST_CASE("tree_all_reduce equals tree_sum bit for bit on every rank", "[mpi][comm]") {
  auto world = triax::testing::test_world();
  for (torch::Dtype dtype : {torch::kFloat, torch::kBFloat16, torch::kDouble}) {
    // Lengths that halve unevenly, shorter than the group, and empty.
    for (int64_t numel : {int64_t{1}, int64_t{3}, int64_t{1000}, int64_t{4097}, int64_t{0}}) {
      check_group(*world, numel, dtype);
    }
  }
  // Groups that are not powers of two: the first k ranks of the world.
  for (int k = 3; k <= world->size(); ++k) {
    if ((k & (k - 1)) == 0) continue;
    const bool member = world->rank() < k;
    auto group = world->split(member ? 0 : 1, world->rank());
    if (member) {
      for (torch::Dtype dtype : {torch::kFloat, torch::kBFloat16}) {
        for (int64_t numel : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{4097}}) {
          check_group(*group, numel, dtype);
        }
      }
    }
  }
  // Non-contiguous: a transposed view is summed in place.
  torch::Tensor t = part_of(world->rank(), 60, torch::kFloat).view({6, 10}).t();
  std::vector<torch::Tensor> parts;
  for (int r = 0; r < world->size(); ++r)
    parts.push_back(part_of(r, 60, torch::kFloat).view({6, 10}).t());
  triax::tree_all_reduce(*world, t);
  CHECK(bitwise_equal(t, triax::tree_sum(parts)));
}
