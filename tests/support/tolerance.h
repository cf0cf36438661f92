// defines: triax::test::kFp32Tol, triax::test::max_abs_diff, TRIAX_CHECK_CLOSE
//
// One named tolerance for comparisons of fp32 computations that differ only in the order of
// additions (a sharded matmul sums its partial products in another order than the full one):
// a few ulp per reassociation, ~1e-7 relative, so 1e-5 on O(1) values leaves a wide margin and
// still catches any real error (a wrong slice or a missing reduction is O(1e-2) or more).
#pragma once

#include <torch/torch.h>
#include <catch2/catch.hpp>

namespace triax::test {

constexpr double kFp32Tol = 1e-5;

inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

}  // namespace triax::test

/// CHECK that |a - b| <= kFp32Tol * max(1, |b|) elementwise, printing the largest difference.
#define TRIAX_CHECK_CLOSE(a, b)                                                     \
  do {                                                                              \
    const torch::Tensor triax_a_ = (a).detach(), triax_b_ = (b).detach();           \
    INFO(#a << " vs " << #b << ": max |diff| "                                      \
            << ::triax::test::max_abs_diff(triax_a_, triax_b_));                    \
    CHECK(torch::allclose(triax_a_.to(torch::kDouble), triax_b_.to(torch::kDouble), \
                          ::triax::test::kFp32Tol, ::triax::test::kFp32Tol));       \
  } while (false)
