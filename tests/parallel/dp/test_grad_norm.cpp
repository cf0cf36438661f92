// The global gradient norm over a model-parallel group (mpiexec -n 1, 2, 4): each rank holds its
// slice of the whole model's gradients; the norm equals the whole gradient's norm computed in
// double, uncounted copies are left out of it but still clipped, and clipping scales every
// gradient by max_norm / (norm + 1e-6).
#include <catch2/catch.hpp>

#include <cmath>

#include "parallel/comm/mpi_communicator.h"
#include "parallel/dp/grad_norm.h"

using namespace triax;

TEST_CASE("clip_grad_norm measures the whole model's norm and clips every gradient", "[mpi][dp]") {
  auto world = MpiCommunicator::world();
  const int rank = world->rank();
  const int size = world->size();
  torch::manual_seed(7);
  // The whole model's gradients: tensors of several shapes and magnitudes.
  const std::vector<torch::Tensor> whole = {torch::randn({40, 24}) * 3, torch::randn({24}) * 1e-3,
                                            torch::randn({8, 4, 12}), torch::randn({1000})};
  double squares = 0;
  for (const auto& g : whole) squares += g.to(torch::kDouble).pow(2).sum().item<double>();
  const double expected = std::sqrt(squares);

  for (double max_norm : {0.0, 1e6, 5.0}) {
    // This rank's slice of each (rows split over ranks), plus a replica it must not count.
    std::vector<torch::Tensor> mine, counted;
    for (const auto& g : whole) {
      const int64_t rows = g.size(0);
      const int64_t begin = rows * rank / size;
      const int64_t end = rows * (rank + 1) / size;
      mine.push_back(g.narrow(0, begin, end - begin).clone());
      counted.push_back(mine.back());
    }
    const torch::Tensor replica = whole[0].clone();
    mine.push_back(replica);
    const double norm = clip_grad_norm(mine, counted, max_norm, *world);
    CHECK(norm == Approx(expected).epsilon(1e-6));
    const double scale = max_norm > 0 && expected > max_norm ? max_norm / (norm + 1e-6) : 1.0;
    CHECK(replica.allclose(whole[0] * scale, 1e-6, 0));
    for (size_t k = 0; k < whole.size(); ++k) {
      const int64_t rows = whole[k].size(0);
      const int64_t begin = rows * rank / size;
      const torch::Tensor want = whole[k].narrow(0, begin, mine[k].size(0)) * scale;
      CHECK(mine[k].allclose(want, 1e-6, 1e-12));
    }
  }
}
