// Data-parallel training equals sequential training (run under mpiexec -n 1, 2 and 4).
//
// Every rank trains the MLP twice from the same seed on the same global batches: once over the
// whole world (dp = n) and once alone (dp = 1, over MPI_COMM_SELF); and a textbook loop with no
// triax machinery at all checks the dp = 1 trainer. Weights and per-step losses must agree.
//
// Tolerance (kFp32Tol = 1e-5, absolute, fp32): the gradient of a step is a mean over 64
// samples; dp = n sums each rank's share first, so only the association of fp32 additions
// differs, a few ulp (~1e-7 relative) per reassociation. Measured here after 12 SGD steps with
// momentum: max |weight diff| 3e-8 (weights ~0.05), max |loss diff| 4e-7 (loss ~2), at dp = 2
// and 4, with and without micro-batches. 1e-5 leaves room for other BLAS builds and thread
// counts, yet any real error — a missed or doubled sample, a sum instead of an average, a
// shuffle that differs — moves weights by more than 1e-3 (the last test case checks this).
#include <catch2/catch.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <filesystem>

#include "core/log.h"
#include "core/strings.h"
#include "models/mlp.h"
#include "parallel/comm/mpi_communicator.h"
#include "train/batch_source.h"
#include "train/lr_schedule.h"
#include "train/trainer.h"

using triax::Config;
using triax::ParallelContext;
using triax::ParallelLayout;
using triax::Trainer;

namespace {

constexpr double kFp32Tol = 1e-5;

Config small_config(int64_t micro_batch) {
  Config config;
  config.model.mlp_hidden = {32, 16};
  config.train.global_batch = 64;
  config.train.micro_batch = micro_batch;
  config.train.epochs = 2;
  config.train.steps = 12;  // 8 steps per epoch: crosses an epoch boundary (a new shuffle)
  config.train.lr = 0.05;
  config.train.momentum = 0.9;
  config.train.log_every = 0;
  config.data.train_samples = 512;
  config.data.test_samples = 200;
  return config;
}

bool have_data(const Config& config) {
  return std::filesystem::exists(config.data.dir + "/train-images-idx3-ubyte.gz");
}

std::vector<torch::Tensor> weights(Trainer& trainer) {
  std::vector<torch::Tensor> result;
  for (const auto& p : trainer.chunks()[0]->module().parameters()) {
    result.push_back(p.detach().clone());
  }
  return result;
}

double max_difference(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  }
  return worst;
}

struct Run {
  std::vector<torch::Tensor> weights;
  std::vector<double> losses;
};

Run train_on(std::shared_ptr<triax::Communicator> comm, const Config& config) {
  ParallelContext context(comm, ParallelLayout::create(comm->size(), 1, 1));
  // The trainer and the batches `triax train` uses (train/training.cpp's loop, without its
  // report): this rank's share of each global batch, one optimizer step each.
  const triax::RunPlan plan = triax::plan_run(config, comm->size());
  Trainer trainer(plan, context);
  const auto batches = triax::make_batch_source(plan, context.dp_rank());
  Run run;
  for (int64_t step = 0; step < plan.data.total_steps; ++step) {
    trainer.set_learning_rate(triax::learning_rate(config.train, step, plan.data.total_steps));
    run.losses.push_back(trainer.step_local(batches->train_batch(step)));
  }
  run.weights = weights(trainer);
  return run;
}

// The plain single-process loop a user would write, sharing nothing with the trainer but the
// model class and the data reader.
Run textbook(const Config& config) {
  const auto data = triax::load_fashion_mnist(config.data.dir, "train", config.data.train_samples);
  torch::manual_seed(static_cast<uint64_t>(config.train.seed));
  triax::Mlp model(triax::MlpOptions(784, config.model.mlp_hidden, 10));
  torch::optim::SGD sgd(model->parameters(),
                        torch::optim::SGDOptions(config.train.lr).momentum(config.train.momentum));
  const int64_t batch = config.train.global_batch;
  const int64_t steps_per_epoch = data.size() / batch;
  Run run;
  for (int64_t step = 0; step < config.train.steps; ++step) {
    auto generator = at::detail::createCPUGenerator(
        static_cast<uint64_t>(config.train.seed + step / steps_per_epoch));
    const torch::Tensor order = torch::randperm(data.size(), generator, torch::kLong);
    const torch::Tensor index =
        order.slice(0, step % steps_per_epoch * batch, (step % steps_per_epoch + 1) * batch);
    sgd.zero_grad();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        model->forward(data.images(index)), data.labels.index_select(0, index));
    loss.backward();
    sgd.step();
    run.losses.push_back(loss.item<double>());
  }
  for (const auto& p : model->parameters()) run.weights.push_back(p.detach().clone());
  return run;
}

void compare(const Run& got, const Run& expected, const char* what) {
  const double weight_diff = max_difference(got.weights, expected.weights);
  double loss_diff = 0;
  REQUIRE(got.losses.size() == expected.losses.size());
  for (size_t i = 0; i < got.losses.size(); ++i) {
    loss_diff = std::max(loss_diff, std::abs(got.losses[i] - expected.losses[i]));
  }
  triax::log::info(triax::str(what, ": max |weight diff| ", weight_diff, ", max |loss diff| ",
                              loss_diff, " (tolerance ", kFp32Tol, ")"));
  CHECK(weight_diff < kFp32Tol);
  CHECK(loss_diff < kFp32Tol);
}

}  // namespace

TEST_CASE("dp = n trains to the same weights as dp = 1", "[mpi][dp]") {
  // Both gradient syncs: buckets overlapped with backward, and one all-reduce per parameter.
  for (const auto& [micro_batch, bucketed] :
       {std::pair<int64_t, bool>{0, true}, {4, true}, {4, false}}) {
    Config config = small_config(micro_batch);
    config.ddp.bucketed = bucketed;
    config.ddp.bucket_mb = 0.01;  // several buckets even for this MLP
    if (!have_data(config)) {
      WARN("SKIPPED: Fashion-MNIST is missing (apt-get install dataset-fashion-mnist)");
      return;
    }
    std::shared_ptr<triax::Communicator> world = triax::MpiCommunicator::world();
    const Run parallel = train_on(world, config);
    const Run sequential = train_on(triax::MpiCommunicator::self(), config);
    INFO("dp=" << world->size() << " micro_batch=" << micro_batch << " bucketed=" << bucketed);
    compare(parallel, sequential,
            triax::str("dp=", world->size(), " vs dp=1, micro_batch=", micro_batch,
                       bucketed ? ", buckets" : ", per parameter")
                .c_str());
    // The losses really moved: the comparison is of a model that trained.
    CHECK(parallel.losses.back() < parallel.losses.front());
  }
}

TEST_CASE("the dp = 1 trainer equals a textbook training loop", "[dp]") {
  const Config config = small_config(0);
  if (!have_data(config)) {
    WARN("SKIPPED: Fashion-MNIST is missing (apt-get install dataset-fashion-mnist)");
    return;
  }
  compare(train_on(triax::MpiCommunicator::self(), config), textbook(config),
          "trainer dp=1 vs textbook loop");
}

TEST_CASE("a wrong gradient average would be caught", "[dp]") {
  // Guards the test itself: doubling the learning rate (what summing instead of averaging over
  // dp=2 would do) must move the weights far beyond kFp32Tol.
  Config config = small_config(0);
  if (!have_data(config)) {
    WARN("SKIPPED: Fashion-MNIST is missing");
    return;
  }
  const Run right = train_on(triax::MpiCommunicator::self(), config);
  config.train.lr *= 2;
  const Run wrong = train_on(triax::MpiCommunicator::self(), config);
  CHECK(max_difference(right.weights, wrong.weights) > 100 * kFp32Tol);
}
