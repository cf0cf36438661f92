// All-to-all (Ulysses) context parallelism under mpiexec -n C: the sequence-to-heads exchange and
// its inverse, and attention through them against causal attention over the whole sequence in
// float64 (outputs and the gradients of q, k and v), with as many kv heads as query heads and
// grouped; heads not divisible by C are refused.
#include <catch2/catch.hpp>

#include "parallel/comm/mpi_communicator.h"
#include "parallel/cp/all_to_all_attention.h"
#include "parallel/cp/context_split.h"
#include "support/tolerance.h"

using namespace triax;

namespace {

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, double scale) {
  const int64_t group = q.size(1) / k.size(1), s = q.size(2);
  const torch::Tensor kk = k.repeat_interleave(group, 1), vv = v.repeat_interleave(group, 1);
  const torch::Tensor mask = torch::ones({s, s}, torch::kBool).triu(1);
  return torch::matmul(
      torch::softmax(torch::matmul(q, kk.transpose(-1, -2)).mul(scale).masked_fill(mask, -INFINITY),
                     -1),
      vv);
}

}  // namespace

TEST_CASE("sequence_to_heads gives each rank its heads over the whole sequence", "[mpi][cp]") {
  const std::unique_ptr<MpiCommunicator> cp = MpiCommunicator::world();
  const int c = cp->size();
  const int64_t length = 2 * c * 3, heads = 2 * c;
  // The same whole tensor everywhere: element (b, h, s, d) = 1000 h + 10 s + d.
  const torch::Tensor whole =
      (torch::arange(heads).view({1, heads, 1, 1}) * 1000 +
       torch::arange(length).view({1, 1, length, 1}) * 10 + torch::arange(4).view({1, 1, 1, 4}))
          .to(torch::kDouble)
          .expand({2, heads, length, 4})
          .contiguous();
  const ContextSplit split(length, cp->rank(), c);
  const torch::Tensor part = split.take(whole, 2).requires_grad_();
  const torch::Tensor mine = sequence_to_heads(part, split, *cp);
  CHECK(mine.equal(whole.narrow(1, cp->rank() * 2, 2)));
  const torch::Tensor back = heads_to_sequence(mine, split, *cp);
  CHECK(back.equal(part));
  // Backward of the pair is the identity too.
  (back * 3).sum().backward();
  CHECK(part.grad().equal(torch::full_like(part, 3)));
}

TEST_CASE("all-to-all attention equals causal attention over the whole sequence", "[mpi][cp]") {
  const std::unique_ptr<MpiCommunicator> cp = MpiCommunicator::world();
  const int c = cp->size();
  struct Case {
    int64_t heads, kv_heads;
  };
  for (const Case& cs : {Case{2 * c, 2 * c}, Case{4 * c, c}}) {
    const int64_t b = 2, d = 8, length = 2 * c * 3;
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    INFO("cp " << c << " heads " << cs.heads << " kv heads " << cs.kv_heads);
    torch::manual_seed(9);
    const auto options = torch::TensorOptions().dtype(torch::kDouble);
    const torch::Tensor q = torch::randn({b, cs.heads, length, d}, options).requires_grad_();
    const torch::Tensor k = torch::randn({b, cs.kv_heads, length, d}, options).requires_grad_();
    const torch::Tensor v = torch::randn({b, cs.kv_heads, length, d}, options).requires_grad_();
    const torch::Tensor probe = torch::randn({b, cs.heads, length, d}, options);
    const torch::Tensor expected = causal_attention(q, k, v, scale);
    (expected * probe).sum().backward();

    const ContextSplit split(length, cp->rank(), c);
    const auto local = [&](const torch::Tensor& t) {
      return split.take(t.detach(), 2).to(torch::kFloat).requires_grad_();
    };
    const torch::Tensor ql = local(q), kl = local(k), vl = local(v);
    const torch::Tensor out = all_to_all_attention(
        ql, kl, vl, split, *cp,
        [scale](const torch::Tensor& qq, const torch::Tensor& kk, const torch::Tensor& vv) {
          return causal_attention(qq, kk, vv, scale);
        });
    TRIAX_CHECK_CLOSE(out, split.take(expected, 2));
    (out * split.take(probe, 2).to(torch::kFloat)).sum().backward();
    TRIAX_CHECK_CLOSE(ql.grad(), split.take(q.grad(), 2));
    TRIAX_CHECK_CLOSE(kl.grad(), split.take(k.grad(), 2));
    TRIAX_CHECK_CLOSE(vl.grad(), split.take(v.grad(), 2));
  }
  if (c > 1) {
    const ContextSplit split(2 * c, cp->rank(), c);
    const torch::Tensor odd = torch::zeros({1, c + 1, 2, 4});
    CHECK_THROWS_WITH(all_to_all_attention(odd, odd, odd, split, *cp, nullptr),
                      Catch::Contains("must both be divisible by the"));
  }
}
