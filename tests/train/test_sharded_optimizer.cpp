// ZeRO-1 (ddp.shard: optimizer) under mpiexec -n 2, 4, 8: in every (dp, tp, pp) layout with
// dp > 1 and schedule that fits, training matches the unsharded optimizer in the same layout within
// the composition test's tolerances (reduce-scatter and the sharded norm sum in another order);
// each rank holds 1/dp of AdamW's state; and a run resumes at another dp, in both directions,
// continuing the loss of an uninterrupted run. ZeRO-2 (ddp.shard: gradients): the same against
// ZeRO-1 in every layout and schedule (with sequence parallelism at tp 2), bit for bit with one
// micro-batch a step, holding 1/dp of the gradient between steps and a bounded few buckets during
// backward. Hybrid sharding (optimizer.shard_group 2 at dp 4 and 8), both levels: the same against
// the unsharded optimizer, 1/2 of the state per rank, and resuming on one process. ZeRO-3
// (ddp.shard: parameters): ZeRO-2 bit for bit (with ddp.unit_buckets, the same buckets and
// reductions; the parameters
// gathered from the slices the update wrote) in every layout and schedule, with recompute,
// sequence parallelism, hybrid groups and each reshard switch, on the GPT and the Llama; holding
// 1/dp of the parameters between steps and a few units during one; resuming across levels.
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>

#include "parallel/comm/mpi_communicator.h"
#include "support/test_world.h"
#include "support/tiny_gpt.h"
#include "support/tiny_llama.h"
#include "train/trainer.h"

using namespace triax;

namespace {

constexpr double kLossTol = 1e-5;   // relative, per step (as test_composition.cpp)
constexpr double kParamTol = 5e-5;  // absolute, final parameters

struct Run {
  std::vector<double> losses, norms;
};

Run train(Trainer& trainer, const Config& config, int first, int steps) {
  Run run;
  for (int step = first; step < first + steps; ++step) {
    run.losses.push_back(trainer.step(testing::tiny_gpt_batch(step, config)));
    run.norms.push_back(trainer.last_grad_norm());
  }
  return run;
}

double max_rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]) / b[k]);
  return worst;
}

// The largest absolute difference between the two trainers' parameters (same layout).
std::vector<torch::Tensor> parameters_of(Trainer& trainer);

double max_param_diff(Trainer& got, Trainer& want) {
  double worst = 0;
  const auto expected = parameters_of(want), have = parameters_of(got);
  for (size_t k = 0; k < expected.size(); ++k) {
    worst = std::max(worst, (have[k] - expected[k]).abs().max().item<double>());
  }
  return worst;
}

// Copies of the parameters (ZeRO-3 gathers them for the copy).
std::vector<torch::Tensor> parameters_of(Trainer& trainer) {
  std::vector<torch::Tensor> out;
  trainer.with_whole_parameters([&] {
    for (auto& chunk : trainer.chunks()) {
      for (const auto& p : chunk->module().parameters()) out.push_back(p.detach().clone());
    }
  });
  return out;
}

bool same_parameters(Trainer& a, Trainer& b) {
  const auto x = parameters_of(a), y = parameters_of(b);
  if (x.size() != y.size()) return false;
  for (size_t k = 0; k < x.size(); ++k) {
    if (!torch::equal(x[k], y[k])) return false;
  }
  return true;
}

std::map<std::string, torch::Tensor> as_map(CheckpointContents contents) {
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, tensor] : materialize(std::move(contents))) out[name] = tensor.clone();
  return out;
}

}  // namespace

TEST_CASE("ZeRO-1 trains like the unsharded optimizer in every layout", "[mpi][zero]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  for (int tp : {1, 2}) {
    for (int pp : {1, 2}) {
      // dp = 1 has nothing to shard (the same arithmetic as unsharded).
      if (n % (tp * pp) != 0 || n / (tp * pp) < 2) continue;
      std::vector<std::pair<std::string, int>> schedules{{"1f1b", 1}};
      if (pp > 1) schedules = {{"gpipe", 1}, {"interleaved", 2}};
      for (const auto& [name, chunks] : schedules) {
        INFO("dp=" << n / (tp * pp) << " tp=" << tp << " pp=" << pp << " schedule=" << name);
        Config config = testing::tiny_gpt_config(tp, pp, name, chunks);
        config.train.weight_decay = 0.1;
        config.train.global_batch = 16;  // micro-batch 2 at dp up to 8
        ParallelContext context(world, ParallelLayout::from_config(config.parallel, n));
        Trainer plain(testing::plan_for(config, context), context);
        const Run expected = train(plain, config, 0, 8);
        config.optimizer.shard = true;
        Trainer sharded(testing::plan_for(config, context), context);
        const Run got = train(sharded, config, 0, 8);
        CHECK(max_rel_diff(got.losses, expected.losses) < kLossTol);
        CHECK(max_rel_diff(got.norms, expected.norms) < kLossTol);
        CHECK(max_param_diff(sharded, plain) < kParamTol);
        // Each rank holds its 1/dp slice of the moments (buckets are padded to dp slices).
        const double ratio = static_cast<double>(sharded.optimizer_state_bytes()) /
                             static_cast<double>(plain.optimizer_state_bytes());
        const int dp = n / (tp * pp);
        CHECK(ratio <= 1.0 / dp + 0.02);
      }
    }
  }
}

TEST_CASE("ZeRO-2 trains like ZeRO-1 in every layout and schedule, keeping a gradient slice",
          "[mpi][zero]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  for (int tp : {1, 2}) {
    for (int pp : {1, 2}) {
      if (n % (tp * pp) != 0 || n / (tp * pp) < 2) continue;  // dp = 1: nothing to shard
      const int dp = n / (tp * pp);
      std::vector<std::pair<std::string, int>> schedules{{"1f1b", 1}};
      if (pp > 1) schedules = {{"gpipe", 1}, {"interleaved", 2}, {"zbh1", 1}, {"zbv", 2}};
      for (const auto& [name, chunks] : schedules) {
        INFO("dp=" << dp << " tp=" << tp << " pp=" << pp << " schedule=" << name);
        Config config = testing::tiny_gpt_config(tp, pp, name, chunks);
        config.train.weight_decay = 0.1;
        config.train.global_batch = 16;  // 8 / dp micro-batches of 2 per rank
        // At tp 2 the sequence-parallel sums over tp act on the slices (they must line up).
        config.parallel.sequence = tp > 1;
        ParallelContext context(world, ParallelLayout::from_config(config.parallel, n));
        config.ddp.shard = ShardLevel::kOptimizer;
        Trainer first(testing::plan_for(config, context), context);
        const Run expected = train(first, config, 0, 6);
        config.ddp.shard = ShardLevel::kGradients;
        Trainer second(testing::plan_for(config, context), context);
        const Run got = train(second, config, 0, 6);
        CHECK(max_rel_diff(got.losses, expected.losses) < kLossTol);
        CHECK(max_rel_diff(got.norms, expected.norms) < kLossTol);
        CHECK(max_param_diff(second, first) < kParamTol);
        // Between steps only the slices are left: ZeRO-1 holds the whole buffer beside them.
        CHECK(second.gradient_bytes() * (dp + 1) == first.gradient_bytes());
        // During backward: the slices, and per chunk the gradients of buckets not yet complete
        // and at most 2 in flight: 4 buckets, each at most ddp.bucket_mb or one larger
        // parameter, is the bound docs/memory.md states. A split backward's W pass computes a
        // micro-batch's weight gradients of a chunk together: one whole gradient more.
        const bool split = name == "zbh1" || name == "zbv";
        const double whole = static_cast<double>(first.gradient_bytes()) * dp / (dp + 1);
        double largest = 0;
        for (const auto& p : parameters_of(second)) {
          largest = std::max(largest, static_cast<double>(p.nbytes()));
        }
        const double bucket = std::max(largest, config.ddp.bucket_mb * 1024 * 1024);
        const double bound = static_cast<double>(second.gradient_bytes()) + (split ? whole : 0) +
                             chunks * 4 * bucket;
        INFO("peak " << second.peak_gradient_bytes() << " slices " << second.gradient_bytes()
                     << " bound " << bound);
        CHECK(static_cast<double>(second.peak_gradient_bytes()) <= bound);
        std::printf(
            "[zero2] dp=%d tp=%d pp=%d %-11s gradient bytes: ZeRO-1 %lld, ZeRO-2 %lld "
            "(peak in a step %lld)\n",
            dp, tp, pp, name.c_str(), static_cast<long long>(first.gradient_bytes()),
            static_cast<long long>(second.gradient_bytes()),
            static_cast<long long>(second.peak_gradient_bytes()));
      }
    }
  }
}

// Also on a bf16 wire, and under hybrid sharding (groups of 2 where dp >= 4), whose replica
// all-reduce ZeRO-2 defers to the end of the step: the same operations as ZeRO-1's.
TEST_CASE("ZeRO-2 with one micro-batch a step is ZeRO-1 bit for bit", "[mpi][zero]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  for (int tp : {1, 2}) {
    if (n % tp != 0) continue;
    const int dp = n / tp;
    for (const int group : {0, 2}) {
      if (group > 0 && (dp < 4 || dp % group != 0)) continue;
      for (const bool wire_bf16 : {false, true}) {
        INFO("dp=" << dp << " tp=" << tp << " shard_group=" << group
                   << " reduce_dtype=" << (wire_bf16 ? "bf16" : "fp32"));
        Config config = testing::tiny_gpt_config(tp, 1, "1f1b", 1);
        config.train.global_batch = 2 * dp;  // one micro-batch of 2 per rank
        config.parallel.sequence = tp > 1;
        config.optimizer.shard_group = group;
        if (wire_bf16) config.ddp.reduce_dtype = Precision::kBf16;
        ParallelContext context(world, ParallelLayout::from_config(config.parallel, n));
        config.ddp.shard = ShardLevel::kOptimizer;
        Trainer first(testing::plan_for(config, context), context);
        const Run expected = train(first, config, 0, 5);
        config.ddp.shard = ShardLevel::kGradients;
        Trainer second(testing::plan_for(config, context), context);
        const Run got = train(second, config, 0, 5);
        CHECK(got.losses == expected.losses);
        CHECK(got.norms == expected.norms);
        CHECK(same_parameters(second, first));
      }
    }
  }
}

TEST_CASE("hybrid sharding (optimizer.shard_group) trains like the unsharded optimizer",
          "[mpi][zero]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  for (int pp : {1, 2}) {
    const int dp = n / pp;
    if (n % pp != 0 || dp < 4) continue;  // groups of 2, at least 2 of them
    for (const auto& [level, wire_bf16] :
         std::vector<std::pair<ShardLevel, bool>>{{ShardLevel::kOptimizer, false},
                                                  {ShardLevel::kOptimizer, true},
                                                  {ShardLevel::kGradients, false},
                                                  {ShardLevel::kGradients, true}}) {
      INFO("dp=" << dp << " pp=" << pp << " ddp.shard=" << level
                 << " shard_group=2 reduce_dtype=" << (wire_bf16 ? "bf16" : "fp32"));
      Config config = testing::tiny_gpt_config(1, pp, "1f1b", 1);
      config.train.weight_decay = 0.1;
      config.train.global_batch = 16;
      if (wire_bf16) config.ddp.reduce_dtype = Precision::kBf16;
      ParallelContext context(world, ParallelLayout::from_config(config.parallel, n));
      Trainer plain(testing::plan_for(config, context), context);
      const Run expected = train(plain, config, 0, 8);
      config.ddp.shard = level;
      config.optimizer.shard_group = 2;
      Trainer hybrid(testing::plan_for(config, context), context);
      const Run got = train(hybrid, config, 0, 8);
      // A bf16 wire rounds the sums in another grouping (within groups, then across): the
      // reduce_dtype test's bounds.
      const double tol = wire_bf16 ? 2e-3 : kLossTol;
      CHECK(max_rel_diff(got.losses, expected.losses) < tol);
      CHECK(max_rel_diff(got.norms, expected.norms) < (wire_bf16 ? 5e-2 : kLossTol));
      CHECK(max_param_diff(hybrid, plain) < (wire_bf16 ? 1e-2 : kParamTol));
      // Each rank holds 1/2 of the moments: sharded within its group of 2, not over dp.
      const double ratio = static_cast<double>(hybrid.optimizer_state_bytes()) /
                           static_cast<double>(plain.optimizer_state_bytes());
      CHECK(ratio <= 0.5 + 0.02);
      CHECK(ratio >= 0.5 - 0.02);
    }
  }
}

TEST_CASE("a ZeRO-1 run resumes at another dp", "[mpi][zero]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  std::shared_ptr<Communicator> self = MpiCommunicator::self();
  ParallelContext wide(world, ParallelLayout::create(n, 1, 1));
  ParallelContext single(self, ParallelLayout::create(1, 1, 1));
  Config config = testing::tiny_gpt_config(1, 1, "1f1b", 1);
  config.train.global_batch = 8 * n;  // micro-batch 2 divides it at every dp
  // The uninterrupted run: one process, unsharded, 6 steps.
  Trainer reference(testing::plan_for(config, single), single);
  const Run expected = train(reference, config, 0, 6);

  config.optimizer.shard = true;
  // 3 steps in `from` (its state sharded within groups of `from_group` dp ranks; 0: all; at
  // `from_level`), the checkpoint contents loaded into a fresh ZeRO-1 trainer in `to`, 3 more.
  const auto resume_across = [&](ParallelContext& from, ParallelContext& to, int from_group = 0,
                                 ShardLevel from_level = ShardLevel::kOptimizer,
                                 ShardLevel to_level = ShardLevel::kOptimizer) {
    Config sharded = config;
    sharded.optimizer.shard_group = from_group;
    sharded.ddp.shard = from_level;
    Trainer first(testing::plan_for(sharded, from), from);
    const Run before = train(first, sharded, 0, 3);
    const auto saved = as_map(first.checkpoint_contents());  // collective over dp
    Config resumed = config;
    resumed.ddp.shard = to_level;
    Trainer second(testing::plan_for(resumed, to), to);
    second.load_state_tensors(saved);
    const Run after = train(second, resumed, 3, 3);
    std::vector<double> losses = before.losses;
    losses.insert(losses.end(), after.losses.begin(), after.losses.end());
    CHECK(max_rel_diff(losses, expected.losses) < kLossTol);
  };
  SECTION("dp = n -> dp = 1") {
    resume_across(wide, single);
  }
  SECTION("dp = 1 -> dp = n") {
    resume_across(single, wide);
  }
  SECTION("ZeRO-2 at dp = n -> ZeRO-1 at dp = 1") {
    resume_across(wide, single, 0, ShardLevel::kGradients);
  }
  SECTION("ZeRO-3 at dp = n -> ZeRO-1 at dp = 1") {
    resume_across(wide, single, 0, ShardLevel::kParameters);
  }
  SECTION("ZeRO-1 at dp = 1 -> ZeRO-3 at dp = n") {
    resume_across(single, wide, 0, ShardLevel::kOptimizer, ShardLevel::kParameters);
  }
  if (n >= 4 && n % 2 == 0) {
    SECTION("dp = n in groups of 2 (hybrid sharding) -> dp = 1") {
      resume_across(wide, single, 2);
    }
  }
}

namespace {

struct Zero3Case {
  std::string name;
  int tp, pp, chunks;
  Recompute recompute = Recompute::kNone;
  bool after_forward = true, after_backward = true;
  int group = 0;
  bool llama = false;
  bool bf16 = false;  // train.precision and ddp.reduce_dtype bf16
};

std::vector<Zero3Case> zero3_cases(int n) {
  std::vector<Zero3Case> out;
  for (const bool llama : {false, true}) {
    for (int tp : {1, 2}) {
      for (int pp : {1, 2}) {
        if (n % (tp * pp) != 0 || n / (tp * pp) < 2) continue;  // dp = 1: nothing to shard
        if (pp == 1) {
          out.push_back({"1f1b", tp, pp, 1, Recompute::kFull, true, true, 0, llama});
          out.push_back({"1f1b", tp, pp, 1, Recompute::kSelective, false, true, 0, llama});
        } else if (!llama) {
          out.push_back({"gpipe", tp, pp, 1, Recompute::kNone, true, false, 0, llama});
          out.push_back({"interleaved", tp, pp, 2, Recompute::kFull, true, true, 0, llama});
          out.push_back({"zbh1", tp, pp, 1, Recompute::kNone, true, true, 0, llama});
          out.push_back({"zbv", tp, pp, 2, Recompute::kNone, false, false, 0, llama});
        } else {
          out.push_back({"1f1b", tp, pp, 1, Recompute::kNone, true, true, 0, llama});
          out.push_back({"zbv", tp, pp, 2, Recompute::kNone, true, true, 0, llama});
        }
      }
    }
  }
  if (n >= 4) out.push_back({"1f1b", 1, 1, 1, Recompute::kNone, true, true, 2, false});  // hybrid
  for (const bool llama : {false, true}) {  // bf16 compute and wire
    out.push_back({"1f1b", 1, 1, 1, Recompute::kNone, true, true, 0, llama, true});
  }
  return out;
}

}  // namespace

TEST_CASE(
    "ZeRO-3 trains like ZeRO-2 bit for bit in every layout and schedule, keeping 1/dp "
    "of the parameters",
    "[mpi][zero]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  for (const Zero3Case& c : zero3_cases(n)) {
    const int dp = n / (c.tp * c.pp);
    INFO((c.llama ? "llama" : "gpt")
         << " dp=" << dp << " tp=" << c.tp << " pp=" << c.pp << " " << c.name
         << " recompute=" << c.recompute << " reshard_after_forward=" << c.after_forward
         << " reshard_after_backward=" << c.after_backward << " shard_group=" << c.group
         << " bf16=" << c.bf16);
    Config config = c.llama ? testing::tiny_llama_config(c.tp, c.pp, c.name, c.chunks)
                            : testing::tiny_gpt_config(c.tp, c.pp, c.name, c.chunks);
    config.train.weight_decay = 0.1;
    config.train.global_batch = 16;  // 8 / dp micro-batches of 2 per rank
    config.train.recompute = c.recompute;
    config.parallel.sequence = c.tp > 1;
    config.optimizer.shard_group = c.group;
    if (c.bf16) {
      config.train.precision = Precision::kBf16;
      config.ddp.reduce_dtype = Precision::kBf16;
    }
    ParallelContext context(world, ParallelLayout::from_config(config.parallel, n));
    config.ddp.shard = ShardLevel::kGradients;
    config.ddp.unit_buckets = true;  // ZeRO-3's bucket layout: the same sums
    Trainer second(testing::plan_for(config, context), context);
    const Run expected = train(second, config, 0, 5);
    config.ddp.shard = ShardLevel::kParameters;
    config.ddp.reshard_after_forward = c.after_forward;
    config.ddp.reshard_after_backward = c.after_backward;
    Trainer third(testing::plan_for(config, context), context);
    const Run got = train(third, config, 0, 5);
    // Read before the comparison below gathers every unit. Between steps every parameter's
    // storage is empty (its values live only in the slices).
    const double peak = static_cast<double>(third.peak_parameter_bytes());
    for (auto& chunk : third.chunks()) {
      for (const auto& p : chunk->module().parameters()) CHECK(p.storage().nbytes() == 0);
    }
    CHECK(got.losses == expected.losses);
    CHECK(got.norms == expected.norms);
    CHECK(same_parameters(third, second));
    // Between steps: this rank's slices only (buckets padded to equal slices).
    const int shards = c.group > 0 ? c.group : dp;
    const double whole = static_cast<double>(second.parameter_bytes());
    const double held = static_cast<double>(third.parameter_bytes());
    CHECK(held >= whole / shards);
    CHECK(held <= whole / shards + 4.0 * 64);  // at most one padding element per bucket
    // During a step: the slices and the units gathered at once — the one computing, the one
    // prefetched, a tied head's embedding: 2 of the 4 blocks and the small embedding here (0.6
    // of the whole); keeping them until backward (or the step's end) holds more, up to the
    // whole chunk.
    CHECK(peak > held);
    if (c.after_forward && c.after_backward && c.pp == 1) CHECK(peak < held + whole * 0.6);
    CHECK(peak <= held + whole * 1.01);
    std::printf(
        "[zero3] %s dp=%d tp=%d pp=%d %-11s parameter bytes: whole %.0f, ZeRO-3 %.0f "
        "(peak in a step %.0f)\n",
        c.llama ? "llama" : "gpt  ", dp, c.tp, c.pp, c.name.c_str(), whole, held, peak);
  }
}
