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

DdpOptions options_of(double bucket_mb, bool allow_unused, bool shard = false,
                      torch::ScalarType wire = torch::kFloat, bool shard_gradients = false) {
  DdpOptions options;
  options.bucket_mb = bucket_mb;
  options.allow_unused = allow_unused;
  options.shard = shard;
  options.reduce_dtype = wire;
  options.shard_gradients = shard_gradients;
  return options;
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
  DistributedDataParallel ddp(used_parameters(net), dp, options_of(0.001, false));  // ~1 KB buckets
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
  DistributedDataParallel ddp(all, *world, options_of(25.0, true));
  net.forward(data(0, 0)).sum().backward();
  ddp.finish();
  CHECK(net.unused.grad().abs().sum().item<double>() == 0.0);
}

// ZeRO-2 (DdpOptions::shard_gradients): every micro-batch's buckets are reduce-scattered during
// its backward and freed; the slices add up to ZeRO-1's (one reduce-scatter of the sum) within
// fp32 rounding; no parameter keeps a .grad; only the slices and a few buckets are ever held; a
// parameter without gradient (allowed) has a zero slice.
TEST_CASE("ZeRO-2 reduce-scatters every micro-batch during backward into ZeRO-1's slices",
          "[mpi][ddp]") {
  auto world = MpiCommunicator::world();
  constexpr int kMicrobatches = 3;
  std::vector<torch::Tensor> slices[2];
  int64_t bytes[2] = {0, 0}, peak[2] = {0, 0};
  for (int level : {1, 2}) {
    CountingCommunicator dp(*world);
    torch::manual_seed(1);
    Net net;
    std::vector<std::pair<std::string, torch::Tensor>> all;
    for (const auto& item : net.named_parameters()) all.emplace_back(item.key(), item.value());
    DistributedDataParallel ddp(all, dp, options_of(0.001, true, true, torch::kFloat, level == 2));
    REQUIRE(ddp.num_buckets() >= 3);
    ddp.zero_grad();
    dp.reset();
    for (int mb = 0; mb < kMicrobatches; ++mb) {
      ddp.set_sync(mb == kMicrobatches - 1);
      net.forward(data(dp.rank(), mb)).pow(2).sum().backward();
      if (level == 2) {
        // This micro-batch's buckets have left during its backward (all but the one holding
        // the first layer's last gradient, and the unused parameter's, left for finish()).
        CHECK(dp.counts().reduce_scatter_calls >= (mb + 1) * (ddp.num_buckets() - 2));
      }
    }
    CHECK(ddp.reduces_to_slices());
    ddp.finish();
    const int64_t calls = dp.counts().reduce_scatter_calls;
    // ZeRO-1: each bucket once. ZeRO-2: every other bucket once per micro-batch; the one with
    // the unused parameter (registered last: the first bucket) never completes, so it holds all
    // micro-batches' gradients of its other members until finish() sends it once.
    CHECK(calls == (level == 1 ? ddp.num_buckets() : kMicrobatches * (ddp.num_buckets() - 1) + 1));
    for (const auto& view : ddp.bucket_views())
      slices[level - 1].push_back(view.grad_shard.clone());
    if (level == 2) {
      for (const auto& item : net.named_parameters()) CHECK(!item.value().grad().defined());
      CHECK(ddp.gradient_shard(net.unused).abs().sum().item<double>() == 0.0);
      CHECK(!ddp.gradient_shard(torch::zeros({3})).defined());  // not one of its parameters
    }
    bytes[level - 1] = ddp.gradient_bytes();
    peak[level - 1] = ddp.peak_gradient_bytes();
  }
  REQUIRE(slices[0].size() == slices[1].size());
  for (size_t b = 0; b < slices[0].size(); ++b) TRIAX_CHECK_CLOSE(slices[1][b], slices[0][b]);
  // ZeRO-1 holds the buckets and the slices; ZeRO-2 the slices (1/n of the buckets) and, during
  // backward, a few ~1 KB buckets' gradients and buffers: for this 6 KB model up to about its
  // whole gradient twice (its gradients and their packed copies), never each micro-batch's
  // (buffers kept past their landing would add a whole gradient per micro-batch).
  const int n = world->size();
  CHECK(bytes[1] * (n + 1) == bytes[0]);
  const int64_t whole = bytes[0] / (n + 1) * n;
  CHECK(peak[1] <= bytes[1] + 2 * whole);
}

// Hybrid ZeRO-2 (groups of 2, replicated across): every micro-batch's buckets reduce-scatter
// inside the group, and each bucket's slice crosses to the other groups once a step (the link
// between nodes carries 4P/S whatever the number of micro-batches), into ZeRO-1's hybrid slices
// within fp32 rounding.
TEST_CASE("hybrid ZeRO-2 all-reduces each bucket across the groups once a step", "[mpi][ddp]") {
  auto world = MpiCommunicator::world();
  const int n = world->size();
  if (n < 4 || n % 2 != 0) return;  // at least two groups of 2
  auto group = world->split(world->rank() / 2, world->rank());
  auto across = world->split(world->rank() % 2, world->rank());
  constexpr int kMicrobatches = 3;
  std::vector<torch::Tensor> slices[2];
  for (int level : {1, 2}) {
    CountingCommunicator replicas(*across);
    torch::manual_seed(1);
    Net net;
    DdpOptions options = options_of(0.001, false, true, torch::kFloat, level == 2);
    options.shard_group = group.get();
    options.replica_group = &replicas;
    DistributedDataParallel ddp(used_parameters(net), *world, options);
    ddp.zero_grad();
    replicas.reset();
    for (int mb = 0; mb < kMicrobatches; ++mb) {
      ddp.set_sync(mb == kMicrobatches - 1);
      net.forward(data(world->rank(), mb)).pow(2).sum().backward();
      if (level == 2) CHECK(replicas.counts().all_reduce_calls == 0);  // none during backward
    }
    ddp.finish();
    CHECK(replicas.counts().all_reduce_calls == ddp.num_buckets());
    for (const auto& view : ddp.bucket_views())
      slices[level - 1].push_back(view.grad_shard.clone());
  }
  REQUIRE(slices[0].size() == slices[1].size());
  for (size_t b = 0; b < slices[0].size(); ++b) TRIAX_CHECK_CLOSE(slices[1][b], slices[0][b]);
}

// ddp.reduce_dtype: bf16. Gradients cross the group as bf16 (half the bytes of fp32) and come
// back as the fp32 average within bf16's rounding; with ZeRO-1's reduce-scatter too.
// The bound: each rank's gradient rounds once into bf16 and each of the n - 1 additions once
// more, each by at most u = 2^-8 (bf16's unit roundoff) of a partial sum, so the sum is off by at
// most n * u * sum_i |g_i| and the average by u * sum_i |g_i|. Relative to the average itself
// the error is unbounded where ranks' gradients cancel, hence the sum of magnitudes.
TEST_CASE("DDP reduces in bf16 when asked: half the bytes, the average within bf16 rounding",
          "[mpi][ddp]") {
  auto world = MpiCommunicator::world();
  const int n = world->size();
  // Every parameter's |local gradient| summed over ranks, unbucketed.
  torch::manual_seed(1);
  Net local;
  local.forward(data(world->rank(), 0)).pow(2).sum().backward();
  std::vector<torch::Tensor> magnitude;
  for (auto& item : used_parameters(local)) {
    magnitude.push_back(item.second.grad().abs());
    world->all_reduce(magnitude.back());
  }
  for (bool shard : {false, true}) {
    INFO("shard " << shard);
    std::vector<torch::Tensor> grads[2];
    std::vector<torch::Tensor> bounds;
    int64_t bytes[2] = {0, 0};
    for (int narrow : {0, 1}) {
      CountingCommunicator dp(*world);
      torch::manual_seed(1);
      Net net;
      const DdpOptions options =
          options_of(0.001, false, shard, narrow ? torch::kBFloat16 : torch::kFloat);
      DistributedDataParallel ddp(used_parameters(net), dp, options);
      dp.reset();
      ddp.set_sync(true);
      net.forward(data(dp.rank(), 0)).pow(2).sum().backward();
      ddp.finish();
      bytes[narrow] = dp.counts().all_reduce_bytes + dp.counts().reduce_scatter_bytes;
      for (const auto& view : ddp.bucket_views()) {
        grads[narrow].push_back(view.grad_shard.clone());
        // This rank's slice of the bucket's magnitudes, laid out as the bucket is.
        torch::Tensor flat = torch::zeros({view.shard_size * n});
        for (const auto& m : view.members) {
          flat.narrow(0, m.offset, m.numel).copy_(magnitude[m.index].flatten());
        }
        if (narrow) bounds.push_back(flat.narrow(0, view.shard_begin, view.shard_size));
      }
      if (!shard) {
        for (auto& item : used_parameters(net)) grads[narrow].push_back(item.second.grad().clone());
        if (narrow) bounds = magnitude;
      }
      for (const auto& g : grads[narrow]) CHECK(g.scalar_type() == torch::kFloat);
    }
    REQUIRE(grads[0].size() == grads[1].size());
    REQUIRE(bounds.size() == grads[0].size());
    if (n == 1) {
      CHECK(bytes[0] == bytes[1]);  // nothing crosses a group of one
      for (size_t k = 0; k < grads[0].size(); ++k) CHECK(torch::equal(grads[0][k], grads[1][k]));
      continue;
    }
    CHECK(bytes[1] * 2 == bytes[0]);
    double worst = 0;
    bool rounded = false;
    for (size_t k = 0; k < grads[0].size(); ++k) {
      const torch::Tensor error = (grads[1][k] - grads[0][k]).abs();
      const torch::Tensor bound = bounds[k] * std::ldexp(1.0, -8) * 1.01;
      worst = std::max(worst, (error / (bound + 1e-30)).max().item<double>());
      rounded = rounded || error.max().item<double>() > 0;
    }
    CHECK(worst <= 1.0);
    CHECK(rounded);  // a bf16 wire that came back bit-equal to fp32 would mean it was not used
    std::printf(
        "[ddp] bf16 reduce dp=%d shard=%d: bytes %lld vs fp32 %lld, worst error %.2f of "
        "the bound\n",
        n, shard, static_cast<long long>(bytes[1]), static_cast<long long>(bytes[0]), worst);
  }
}
