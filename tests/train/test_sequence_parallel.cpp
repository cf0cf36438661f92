// Sequence parallelism (parallel.sequence) under mpiexec -n 2, 4, 8: in every layout with tp = 2
// that fits and every schedule, training matches the same layout without it, alone and combined
// with ZeRO-1 and full recompute, within the composition test's tolerances (reduce-scatter and
// all-gather sum in another order than all-reduce). Dropout 0: with sequence parallelism each tp
// rank draws residual dropout for its own rows, so masks differ by design.
#include <catch2/catch.hpp>

#include "support/test_world.h"
#include "support/tiny_gpt.h"
#include "train/trainer.h"

using namespace triax;

namespace {

struct Run {
  std::vector<double> losses, norms;
  std::vector<torch::Tensor> params;
};

Run train(const Config& config, std::shared_ptr<Communicator> world) {
  ParallelContext context(world, ParallelLayout::from_config(config.parallel, world->size()));
  Trainer trainer(testing::plan_for(config, context), context);
  Run run;
  for (int step = 0; step < 8; ++step) {
    run.losses.push_back(trainer.step(testing::tiny_gpt_batch(step, config)));
    run.norms.push_back(trainer.last_grad_norm());
  }
  // Evaluation runs whole sequences: it must agree too.
  run.losses.push_back(trainer.evaluate_local(
      testing::tiny_gpt_batch(0, config).slice(0, trainer.plan().local_batch)));
  for (auto& chunk : trainer.chunks()) {
    for (const auto& p : chunk->module().parameters()) run.params.push_back(p.detach().clone());
  }
  return run;
}

double max_rel(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]) / b[k]);
  return worst;
}

}  // namespace

TEST_CASE("sequence parallelism trains like plain tensor parallelism", "[mpi][sp]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  if (n % 2 != 0) return;  // needs tp = 2
  for (int pp : {1, 2}) {
    if (n % (2 * pp) != 0) continue;
    std::vector<std::pair<std::string, int>> schedules{{"1f1b", 1}};
    if (pp > 1) schedules = {{"gpipe", 1}, {"1f1b", 1}, {"interleaved", 2}};
    for (const auto& [name, chunks] : schedules) {
      Config config = testing::tiny_gpt_config(2, pp, name, chunks);
      config.train.global_batch = 16;
      const Run expected = train(config, world);
      for (const std::string combo : {"sp", "sp+zero+recompute"}) {
        INFO("dp=" << n / (2 * pp) << " tp=2 pp=" << pp << " schedule=" << name << " " << combo);
        Config with = config;
        with.parallel.sequence = true;
        if (combo != "sp") {
          with.optimizer.shard = true;
          with.train.recompute = Recompute::kFull;
        }
        const Run got = train(with, world);
        CHECK(max_rel(got.losses, expected.losses) < 1e-5);
        CHECK(max_rel(got.norms, expected.norms) < 1e-5);
        double param_diff = 0;
        for (size_t k = 0; k < got.params.size(); ++k) {
          param_diff =
              std::max(param_diff, (got.params[k] - expected.params[k]).abs().max().item<double>());
        }
        CHECK(param_diff < 5e-5);
      }
    }
  }
}
