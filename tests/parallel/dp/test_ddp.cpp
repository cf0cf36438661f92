// Bucketed DDP under mpiexec -n 1, 2, 4: communication only on the last micro-batch, buckets
// launched during backward (overlap), gradients equal to the plain per-parameter average, and
// a parameter without gradient reported by name.
#include <catch2/catch.hpp>

#include "parallel/comm/counting_communicator.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/dp/distributed_data_parallel.h"
#include "parallel/dp/gradient_sync.h"
#include "support/tolerance.h"

using namespace triax;

namespace {

struct Net : torch::nn::Module {
  Net() {
    a = register_module("a", torch::nn::Linear(8, 32));
    b = register_module("b", torch::nn::Linear(32, 32));
    c = register_module("c", torch::nn::Linear(32, 4));
    unused = register_parameter("unused", torch::zeros({3}));
  }
  torch::Tensor forward(const torch::Tensor& x) { return c(torch::relu(b(torch::relu(a(x))))); }
  torch::nn::Linear a{nullptr}, b{nullptr}, c{nullptr};
  torch::Tensor unused;
};

std::vector<std::pair<std::string, torch::Tensor>> used_parameters(Net& net) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : net.named_parameters()) {
    if (item.key() != "unused") named.emplace_back(item.key(), item.value());
  }
  return named;
}

torch::Tensor data(int rank, int microbatch) {
  torch::manual_seed(100 * rank + microbatch);
  return torch::randn({5, 8});
}

}  // namespace

TEST_CASE("DDP syncs only on the last micro-batch, overlapping backward", "[mpi][ddp]") {
  auto world = MpiCommunicator::world();
  CountingCommunicator dp(*world);
  torch::manual_seed(1);
  Net net;
  torch::manual_seed(1);
  Net plain;  // the same model, averaged the simple way
  DistributedDataParallel ddp(used_parameters(net), dp, DdpOptions{0.001, false});  // ~1 KB buckets
  REQUIRE(ddp.num_buckets() >= 3);
  ddp.broadcast_parameters();
  dp.reset();

  ddp.set_sync(false);
  net.forward(data(dp.rank(), 0)).pow(2).sum().backward();
  CHECK(dp.counts().all_reduce_calls == 0);  // earlier micro-batches only accumulate
  ddp.set_sync(true);
  net.forward(data(dp.rank(), 1)).pow(2).sum().backward();
  if (dp.size() > 1) {
    // Every bucket but the one holding the first layer's last gradient started during backward.
    CHECK(dp.counts().all_reduce_calls >= ddp.num_buckets() - 1);
  }
  ddp.finish();
  CHECK(dp.counts().all_reduce_calls == (dp.size() > 1 ? ddp.num_buckets() : 0));

  for (int mb : {0, 1}) plain.forward(data(dp.rank(), mb)).pow(2).sum().backward();
  std::vector<torch::Tensor> plain_params;
  for (auto& item : used_parameters(plain)) plain_params.push_back(item.second);
  average_gradients(plain_params, *world);
  const auto mine = used_parameters(net);
  for (size_t k = 0; k < mine.size(); ++k) {
    INFO(mine[k].first);
    TRIAX_CHECK_CLOSE(mine[k].second.grad(), plain_params[k].grad());
  }

  ddp.zero_grad();
  for (const auto& item : mine) CHECK(item.second.grad().abs().sum().item<double>() == 0.0);
}

TEST_CASE("a parameter without gradient is named, or zero when allowed", "[mpi][ddp]") {
  auto world = MpiCommunicator::world();
  Net net;
  std::vector<std::pair<std::string, torch::Tensor>> all;
  for (const auto& item : net.named_parameters()) all.emplace_back(item.key(), item.value());
  {
    DistributedDataParallel ddp(all, *world);
    net.forward(data(0, 0)).sum().backward();
    CHECK_THROWS_WITH(ddp.finish(),
                      Catch::Contains("no gradient reached 1 parameter(s) in this step: unused") &&
                          Catch::Contains("ddp.allow_unused"));
  }
  DistributedDataParallel ddp(all, *world, DdpOptions{25.0, true});
  net.forward(data(0, 0)).sum().backward();
  ddp.finish();
  CHECK(net.unused.grad().abs().sum().item<double>() == 0.0);
}
