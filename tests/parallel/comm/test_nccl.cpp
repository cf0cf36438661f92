// The NCCL backend on a GPU: collectives at world size 1 (NCCL refuses two ranks on one device)
// give what the MPI backend gives. Skipped, saying why, where this build has no NCCL or
// LibTorch sees no CUDA device (Debian's LibTorch 1.13 is CPU-only): docs/gpu.md runs it on the
// device machine with `ctest -L gpu`.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/nccl_communicator.h"

using namespace triax;

TEST_CASE("NCCL collectives equal the MPI ones", "[cuda][gpu]") {
  if (!nccl_built()) {
    WARN("SKIPPED: this build has no NCCL backend (nccl.h / CUDA runtime not found)");
    return;
  }
  if (!torch::cuda::is_available()) {
    WARN("SKIPPED: LibTorch sees no CUDA device (a CPU-only LibTorch or no GPU): docs/gpu.md");
    return;
  }
  auto self = MpiCommunicator::self();
  auto nccl = make_nccl_communicator(*self, 0);
  REQUIRE(nccl->size() == 1);
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({1000});
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
    torch::Tensor on_gpu = x.to(torch::kCUDA);
    torch::Tensor on_cpu = x.clone();
    nccl->all_reduce(on_gpu, op);
    self->all_reduce(on_cpu, op);
    CHECK(on_gpu.cpu().equal(on_cpu));
  }
  torch::Tensor gathered = nccl->all_gather(x.to(torch::kCUDA));
  CHECK(gathered.cpu().equal(self->all_gather(x)));
  nccl->barrier();
}

TEST_CASE("the NCCL backend refuses CPU tensors, naming the backend", "[cuda]") {
  if (!nccl_built() || !torch::cuda::is_available()) {
    WARN("SKIPPED: no NCCL backend or no CUDA device");
    return;
  }
  auto self = MpiCommunicator::self();
  auto nccl = make_nccl_communicator(*self, 0);
  torch::Tensor cpu = torch::ones({4});
  CHECK_THROWS_WITH(nccl->all_reduce(cpu), Catch::Contains("takes CUDA tensors"));
}

TEST_CASE("without NCCL the backend says how to get it", "[comm]") {
  if (nccl_built()) return;  // this build has it: the [cuda] cases above apply
  auto self = MpiCommunicator::self();
  CHECK_THROWS_WITH(make_nccl_communicator(*self, 0), Catch::Contains("docs/gpu.md"));
}
