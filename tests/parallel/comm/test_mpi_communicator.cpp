// Collectives with closed-form expectations, run under mpiexec -n 1, 2, 4 and 8: every rank
// fills its tensor with its rank (or a known function of it) and checks the exact result.
#include <catch2/catch.hpp>

#include <cmath>

#include "parallel/comm/mpi_bf16_sum.h"
#include "parallel/comm/mpi_communicator.h"
#include "support/test_world.h"

using triax::ReduceOp;

namespace {

std::unique_ptr<triax::Communicator> world() {
  return triax::testing::test_world();
}

// Every element of `t` equals `value` (exactly: small integers are exact in every dtype here).
bool all_equal(const torch::Tensor& t, double value) {
  return t.to(torch::kDouble).eq(value).all().item<bool>();
}

}  // namespace

TEST_CASE("all_reduce sum/avg/max/min of the rank", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  const int r = comm->rank();
  for (auto dtype :
       {torch::kFloat, torch::kDouble, torch::kInt, torch::kLong, torch::kHalf, torch::kBFloat16}) {
    INFO("dtype " << dtype);
    torch::Tensor t = torch::full({5, 3}, r, dtype);
    comm->all_reduce(t, ReduceOp::kSum);
    CHECK(all_equal(t, n * (n - 1) / 2));
    CHECK(t.dtype() == dtype);
    t.fill_(r);
    comm->all_reduce(t, ReduceOp::kMax);
    CHECK(all_equal(t, n - 1));
    t.fill_(r);
    comm->all_reduce(t, ReduceOp::kMin);
    CHECK(all_equal(t, 0));
    if (torch::isFloatingType(dtype)) {
      t.fill_(r);
      comm->all_reduce(t, ReduceOp::kAvg);
      CHECK(all_equal(t, (n - 1) / 2.0));
    }
  }
}

TEST_CASE("avg of an integer tensor is refused", "[mpi][comm]") {
  auto comm = world();
  torch::Tensor t = torch::zeros({2}, torch::kLong);
  CHECK_THROWS_WITH(comm->all_reduce(t, ReduceOp::kAvg), Catch::Contains("avg needs a floating"));
}

TEST_CASE("all_reduce of a non-contiguous tensor writes through the view", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  torch::Tensor base = torch::zeros({6, 4});
  torch::Tensor view = base.t();  // [4, 6], not contiguous
  REQUIRE_FALSE(view.is_contiguous());
  view.copy_(torch::arange(24, torch::kFloat).view({4, 6}) * (comm->rank() + 1));
  comm->all_reduce(view);
  CHECK(torch::equal(view, torch::arange(24, torch::kFloat).view({4, 6}) * (n * (n + 1) / 2)));
  CHECK(torch::equal(base, view.t()));
}

TEST_CASE("all_reduce of a tensor larger than 64 MiB", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  const int64_t elements = 20 * 1024 * 1024;  // 80 MiB of float32
  torch::Tensor t = torch::full({elements}, comm->rank() + 1, torch::kFloat);
  comm->all_reduce(t);
  CHECK(t.min().item<float>() == n * (n + 1) / 2);
  CHECK(t.max().item<float>() == n * (n + 1) / 2);
}

TEST_CASE("all_gather concatenates in rank order", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  const torch::Tensor out = comm->all_gather(torch::full({2, 3}, comm->rank(), torch::kLong));
  REQUIRE(out.sizes() == torch::IntArrayRef({2 * n, 3}));
  for (int i = 0; i < n; ++i) CHECK(all_equal(out.slice(0, 2 * i, 2 * i + 2), i));
  // Non-contiguous input and bfloat16 travel the same way.
  const torch::Tensor input = torch::full({3, 2}, comm->rank(), torch::kBFloat16).t();
  const torch::Tensor gathered = comm->all_gather(input);
  REQUIRE(gathered.sizes() == torch::IntArrayRef({2 * n, 3}));
  for (int i = 0; i < n; ++i) CHECK(all_equal(gathered.slice(0, 2 * i, 2 * i + 2), i));
}

TEST_CASE("reduce_scatter leaves each rank its reduced chunk", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  const int r = comm->rank();
  // Chunk j on rank q holds q + j; reduced chunk j is n(n-1)/2 + n*j.
  torch::Tensor input = torch::empty({2 * n, 3});
  for (int j = 0; j < n; ++j) input.slice(0, 2 * j, 2 * j + 2).fill_(r + j);
  const torch::Tensor out = comm->reduce_scatter(input, ReduceOp::kSum);
  REQUIRE(out.sizes() == torch::IntArrayRef({2, 3}));
  CHECK(all_equal(out, n * (n - 1) / 2 + n * r));
  const torch::Tensor avg = comm->reduce_scatter(input, ReduceOp::kAvg);
  CHECK(torch::allclose(avg, torch::full({2, 3}, (n - 1) / 2.0 + r)));
}

TEST_CASE("all_to_all sends chunk j to rank j", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  const int r = comm->rank();
  // Chunk j from rank q holds 10 q + j: rank r receives 10 i + r from each rank i, in rank order.
  torch::Tensor input = torch::empty({2 * n, 3});
  for (int j = 0; j < n; ++j) input.slice(0, 2 * j, 2 * j + 2).fill_(10 * r + j);
  torch::Tensor output = torch::full_like(input, -1);
  comm->all_to_all_async(output, input)->wait();
  for (int i = 0; i < n; ++i) CHECK(all_equal(output.slice(0, 2 * i, 2 * i + 2), 10 * i + r));
  CHECK_THROWS_WITH(comm->all_to_all_async(output.narrow(0, 0, 1), input),
                    Catch::Contains("of the same shape"));
}

TEST_CASE("broadcast from every root", "[mpi][comm]") {
  auto comm = world();
  for (int root = 0; root < comm->size(); ++root) {
    torch::Tensor t =
        comm->rank() == root ? torch::full({4, 4}, 42.0 + root) : torch::zeros({4, 4});
    comm->broadcast(t, root);
    CHECK(all_equal(t, 42 + root));
  }
}

TEST_CASE("send and recv around a ring", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  const int r = comm->rank();
  torch::Tensor received = torch::full({3}, -1, torch::kLong);
  // Post the receive first so that no rank blocks in a send.
  auto recv = comm->irecv(received, (r - 1 + n) % n, 7);
  auto send = comm->isend(torch::full({3}, r, torch::kLong), (r + 1) % n, 7);
  send->wait();
  recv->wait();
  CHECK(all_equal(received, (r - 1 + n) % n));
}

TEST_CASE("c10d tutorial: blocking and non-blocking send of a 3x4 tensor, rank 0 to 1",
          "[mpi][comm]") {
  auto comm = world();
  if (comm->size() < 2) {
    WARN("SKIPPED at 1 rank: needs 2");
    return;
  }
  const torch::Tensor payload = torch::arange(1, 13, torch::kFloat).view({3, 4});
  if (comm->rank() == 0) {
    comm->send(payload, 1);
    comm->isend(payload * 2, 1, 1)->wait();
  } else if (comm->rank() == 1) {
    torch::Tensor blocking = torch::zeros({3, 4});
    comm->recv(blocking, 0);
    CHECK(torch::equal(blocking, payload));
    torch::Tensor nonblocking = torch::zeros({3, 4});
    auto work = comm->irecv(nonblocking, 0, 1);
    work->wait();
    CHECK(work->is_completed());
    CHECK(torch::equal(nonblocking, payload * 2));
  }
}

TEST_CASE("c10d tutorial: all-reduce of the 3x4 matrix 1..12", "[mpi][comm]") {
  auto comm = world();
  torch::Tensor t = torch::arange(1, 13, torch::kFloat).view({3, 4});
  comm->all_reduce(t);
  CHECK(torch::equal(t, torch::arange(1, 13, torch::kFloat).view({3, 4}) * comm->size()));
}

TEST_CASE("several non-blocking all-reduces in flight at once", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  std::vector<torch::Tensor> tensors;
  std::vector<triax::WorkPtr> pending;
  for (int i = 0; i < 8; ++i) {
    tensors.push_back(torch::full({1000 * (i + 1)}, comm->rank() + i, torch::kDouble));
    pending.push_back(comm->all_reduce_async(tensors.back(), ReduceOp::kSum));
  }
  for (auto& work : pending) work->wait();
  for (int i = 0; i < 8; ++i)
    CHECK(all_equal(tensors[static_cast<size_t>(i)], n * (n - 1) / 2 + n * i));
}

TEST_CASE("split into even and odd ranks, and into none", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  const int r = comm->rank();
  auto half = comm->split(r % 2, r);
  REQUIRE(half != nullptr);
  CHECK(half->size() == (n + 1 - r % 2) / 2);
  CHECK(half->rank() == r / 2);
  torch::Tensor t = torch::full({1}, r, torch::kLong);
  half->all_reduce(t);
  int64_t expected = 0;
  for (int q = r % 2; q < n; q += 2) expected += q;
  CHECK(t.item<int64_t>() == expected);
  auto only_zero = comm->split(r == 0 ? 0 : -1, r);
  CHECK((only_zero != nullptr) == (r == 0));
  comm->barrier();
}

TEST_CASE("bad arguments are errors, not MPI aborts", "[mpi][comm]") {
  auto comm = world();
  torch::Tensor t = torch::zeros({2});
  CHECK_THROWS_WITH(comm->send(t, comm->size()), Catch::Contains("is not in [0,"));
  CHECK_THROWS_WITH(comm->broadcast(t, -1), Catch::Contains("is not in [0,"));
  CHECK_THROWS_WITH(comm->all_gather_async(torch::zeros({3}), t), Catch::Contains("output shape"));
}

// bf16 sums stay bf16 on the wire (mpi_bf16_sum.h). The per-element add is checked against
// c10::BFloat16's own arithmetic (round to nearest even, NaN and infinities), then the
// all-reduce: with two ranks one rounding, exactly fp32's sum rounded to bf16; with more, one
// rounding per addition.
TEST_CASE("bf16 words add as c10::BFloat16 does", "[mpi][comm]") {
  torch::manual_seed(3);
  torch::Tensor a =
      (torch::randn({4096}) * torch::exp(torch::randn({4096}) * 8)).to(torch::kBFloat16);
  torch::Tensor b =
      (torch::randn({4096}) * torch::exp(torch::randn({4096}) * 8)).to(torch::kBFloat16);
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, 1.0f + 1.0f / 256};
  for (int i = 0; i < 7; ++i) {
    for (int j = 0; j < 7; ++j) {
      a[i * 7 + j] = specials[i];
      b[i * 7 + j] = specials[j];
    }
  }
  torch::Tensor sum = b.clone();
  triax::bf16_add_into(reinterpret_cast<const uint16_t*>(a.data_ptr()),
                       reinterpret_cast<uint16_t*>(sum.data_ptr()), a.numel());
  const auto* x = a.data_ptr<c10::BFloat16>();
  const auto* y = b.data_ptr<c10::BFloat16>();
  const auto* got = sum.data_ptr<c10::BFloat16>();
  int differ = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const c10::BFloat16 want(static_cast<float>(x[i]) + static_cast<float>(y[i]));
    const bool both_nan =
        std::isnan(static_cast<float>(want)) && std::isnan(static_cast<float>(got[i]));
    if (!both_nan && want.x != got[i].x) ++differ;
  }
  CHECK(differ == 0);
}

TEST_CASE("all_reduce sums bf16 in bf16", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  torch::manual_seed(10 + comm->rank());
  const torch::Tensor mine = torch::randn({1000}).to(torch::kBFloat16);
  const torch::Tensor all = comm->all_gather(mine.view({1, -1})).to(torch::kFloat);  // exact
  const torch::Tensor exact = all.sum(0);
  torch::Tensor t = mine.clone();
  comm->all_reduce(t, ReduceOp::kSum);
  REQUIRE(t.scalar_type() == torch::kBFloat16);
  const torch::Tensor magnitude = all.abs().sum(0);
  // n - 1 additions, each rounding by at most half a bf16 ulp (2^-8 relative) of a partial sum.
  const auto within_rounding = [&](const torch::Tensor& got) {
    const torch::Tensor error = (got.to(torch::kFloat) - exact).abs();
    return (error <= magnitude * std::max(n - 1, 1) * std::ldexp(1.0, -8)).all().item<bool>();
  };
  CHECK(within_rounding(t));
  if (n <= 2) CHECK(torch::equal(t, exact.to(torch::kBFloat16)));
  // The same through reduce_scatter (its order of additions may differ from all_reduce's).
  const torch::Tensor chunk = comm->reduce_scatter(mine.repeat({n}), ReduceOp::kSum);
  REQUIRE(chunk.scalar_type() == torch::kBFloat16);
  CHECK(within_rounding(chunk));
  if (n <= 2) CHECK(torch::equal(chunk, t));
}

// Several bf16 sums in flight, waited for in reverse order: each is a reduce-scatter then an
// all-gather, and the all-gathers must be posted in the same order on every rank whatever
// order completions are seen in (Note [Two-phase bf16 all-reduce]).
TEST_CASE("bf16 sums in flight together complete in any order of waiting", "[mpi][comm]") {
  auto comm = world();
  const int n = comm->size();
  std::vector<torch::Tensor> tensors;
  std::vector<triax::WorkPtr> works;
  for (int k = 0; k < 6; ++k) {
    // Sizes that do and do not divide by the group; values exact in bf16 and in their sum.
    tensors.push_back(torch::full({1000 * k + 3}, comm->rank() + k, torch::kBFloat16));
    works.push_back(
        comm->all_reduce_async(tensors.back(), k % 2 ? ReduceOp::kSum : ReduceOp::kAvg));
  }
  for (int k = 5; k >= 0; --k) {
    works[k]->wait();
    const double sum = n * (n - 1) / 2.0 + n * k;
    CHECK(all_equal(tensors[k], k % 2 ? sum : sum / n));
  }
}

TEST_CASE("collectives of an empty tensor do nothing, on every backend", "[mpi][comm]") {
  // Gloo's own collectives divide by the element count (SIGFPE); MPI's accept a count of 0.
  auto comm = world();
  torch::Tensor empty = torch::empty({0});
  comm->all_reduce(empty, ReduceOp::kSum);
  CHECK(empty.numel() == 0);
  CHECK(comm->all_gather(torch::empty({1, 0})).sizes() == torch::IntArrayRef({comm->size(), 0}));
  comm->broadcast(empty, 0);
  CHECK(empty.numel() == 0);
}
