// Context parallelism's attention: the head-tail split of a sequence over C ranks, and ring
// attention (mpiexec -n C) against causal attention over the whole sequence computed in float64
// on one rank: outputs and the gradients of q, k and v, with as many kv heads as query heads and
// grouped (2 and 1 kv heads for 4 query heads), with chunks of one position and of several.
#include <catch2/catch.hpp>

#include <set>

#include "parallel/comm/mpi_communicator.h"
#include "parallel/cp/context_split.h"
#include "parallel/cp/ring_attention.h"
#include "support/tolerance.h"

using namespace triax;

TEST_CASE("a context split gives each rank two chunks, all of them once", "[cp]") {
  for (int size : {1, 2, 3, 4}) {
    const int64_t length = 2 * size * 3;
    const torch::Tensor whole = torch::arange(length).view({1, length});
    std::vector<torch::Tensor> parts;
    std::set<int64_t> seen;
    int64_t first_work = -1;
    for (int r = 0; r < size; ++r) {
      const ContextSplit split(length, r, size);
      parts.push_back(split.take(whole, 1));
      CHECK(parts.back().view(-1).equal(split.positions()));
      const torch::Tensor positions = split.positions();
      for (int64_t i = 0; i < positions.numel(); ++i) {
        CHECK(seen.insert(positions[i].item<int64_t>()).second);
      }
      // The causal work of a rank: for each of its positions, the positions at or before it.
      const int64_t work = (split.positions() + 1).sum().item<int64_t>();
      if (first_work < 0) first_work = work;
      INFO("size " << size << " rank " << r);
      CHECK(work == first_work);  // balanced
    }
    CHECK(seen.size() == static_cast<size_t>(length));
    CHECK(ContextSplit(length, 0, size).assemble(parts, 1).equal(whole));
  }
  CHECK_THROWS_WITH(ContextSplit(10, 0, 4), Catch::Contains("not a multiple of 2 x 4 chunks"));
}

namespace {

// Causal attention over the whole sequence, in float64: softmax(q k^T scale + mask) v, each kv
// head serving heads / kv_heads query heads.
torch::Tensor reference_attention(const torch::Tensor& q, const torch::Tensor& k,
                                  const torch::Tensor& v, double scale) {
  const int64_t group = q.size(1) / k.size(1), s = q.size(2);
  const torch::Tensor kk = k.repeat_interleave(group, 1), vv = v.repeat_interleave(group, 1);
  const torch::Tensor mask = torch::ones({s, s}, torch::kBool).triu(1);
  const torch::Tensor scores =
      torch::matmul(q, kk.transpose(-1, -2)).mul(scale).masked_fill(mask, -INFINITY);
  return torch::matmul(torch::softmax(scores, -1), vv);
}

}  // namespace

TEST_CASE("ring attention equals causal attention over the whole sequence", "[mpi][cp]") {
  const std::unique_ptr<MpiCommunicator> cp = MpiCommunicator::world();
  const int size = cp->size();
  struct Case {
    int64_t heads, kv_heads, chunk;
  };
  for (const Case& c : {Case{4, 4, 3}, Case{4, 2, 1}, Case{4, 1, 5}}) {
    const int64_t b = 2, d = 8, length = 2 * size * c.chunk;
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    INFO("cp " << size << " heads " << c.heads << " kv heads " << c.kv_heads << " length "
               << length);
    torch::manual_seed(5);  // the same tensors on every rank
    const auto options = torch::TensorOptions().dtype(torch::kDouble);
    const torch::Tensor q = torch::randn({b, c.heads, length, d}, options).requires_grad_();
    const torch::Tensor k = torch::randn({b, c.kv_heads, length, d}, options).requires_grad_();
    const torch::Tensor v = torch::randn({b, c.kv_heads, length, d}, options).requires_grad_();
    const torch::Tensor probe = torch::randn({b, c.heads, length, d}, options);
    const torch::Tensor expected = reference_attention(q, k, v, scale);
    (expected * probe).sum().backward();

    const ContextSplit split(length, cp->rank(), size);
    const auto local = [&](const torch::Tensor& t) {
      return split.take(t.detach(), 2).to(torch::kFloat).requires_grad_();
    };
    const torch::Tensor ql = local(q), kl = local(k), vl = local(v);
    const torch::Tensor out = ring_attention(ql, kl, vl, split, *cp, scale);
    CHECK(out.scalar_type() == torch::kFloat);
    TRIAX_CHECK_CLOSE(out, split.take(expected, 2));
    (out * split.take(probe, 2).to(torch::kFloat)).sum().backward();
    TRIAX_CHECK_CLOSE(ql.grad(), split.take(q.grad(), 2));
    TRIAX_CHECK_CLOSE(kl.grad(), split.take(k.grad(), 2));
    TRIAX_CHECK_CLOSE(vl.grad(), split.take(v.grad(), 2));
  }
}

TEST_CASE("ring attention repeats bit for bit", "[mpi][cp]") {
  const std::unique_ptr<MpiCommunicator> cp = MpiCommunicator::world();
  const ContextSplit split(2 * cp->size() * 4, cp->rank(), cp->size());
  torch::manual_seed(7 + cp->rank());
  const torch::Tensor q = torch::randn({1, 2, split.local_length(), 4}).requires_grad_();
  const torch::Tensor k = torch::randn({1, 2, split.local_length(), 4}).requires_grad_();
  const torch::Tensor v = torch::randn({1, 2, split.local_length(), 4}).requires_grad_();
  std::vector<torch::Tensor> runs;
  for (int i = 0; i < 2; ++i) {
    for (const auto& t : {q, k, v}) t.mutable_grad() = torch::Tensor();
    ring_attention(q, k, v, split, *cp, 0.5).pow(2).sum().backward();
    runs.push_back(torch::cat({q.grad().view(-1), k.grad().view(-1), v.grad().view(-1)}));
  }
  CHECK(runs[0].equal(runs[1]));
}
