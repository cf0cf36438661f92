// plan_run validates a run once, before any communication: each invalid layout or batch is one
// ConfigError naming the key, the value and what is valid; a valid plan holds the layout, the
// batch plan, the checked schedule and the stage split; the data is opened only when asked.
#include <catch2/catch.hpp>

#include <torch/cuda.h>

#include "core/error.h"
#include "support/tiny_gpt.h"
#include "train/compute_device.h"
#include "train/run_plan.h"

using Catch::Contains;
using namespace triax;

namespace {

Config gpt(int tp, int pp) {
  return testing::tiny_gpt_config(tp, pp, "1f1b", 1);
}

}  // namespace

TEST_CASE("a valid GPT plan holds layout, batch, schedule and stages", "[plan]") {
  Config c = gpt(2, 2);
  c.model.layers = 6;
  const RunPlan plan = plan_run(c, 8, DataCheck::kSkip);
  CHECK(plan.model == ModelKind::kGpt);
  CHECK(plan.layout.dp_size() == 2);
  CHECK(plan.batch.local_batch == 4);
  CHECK(plan.batch.num_microbatches == 2);
  CHECK(plan.schedule.name == "1f1b");
  CHECK(plan.schedule.stages == 2);
  CHECK(plan.schedule.microbatches == 2);
  CHECK((plan.stage_layers == std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 6}}));
  CHECK_FALSE(plan.has_data);
  CHECK_THAT(plan.describe(), Contains("world 8 = dp 2 x tp 2 x pp 2") &&
                                  Contains("global batch 8 = dp 2 x 2 micro-batches x 2") &&
                                  Contains("stage layers: s0=[0,3) s1=[3,6)") &&
                                  Contains("data: not opened"));
}

TEST_CASE("plan_run refuses each invalid layout, naming the key", "[plan]") {
  CHECK_THROWS_WITH(plan_run(gpt(2, 1), 3, DataCheck::kSkip),
                    Contains("world size 3 is not divisible by parallel.tensor * "
                             "parallel.pipeline = 2 * 1 = 2"));
  Config fixed = gpt(1, 1);
  fixed.parallel.data = 2;
  CHECK_THROWS_WITH(plan_run(fixed, 4, DataCheck::kSkip),
                    Contains("parallel.data: 2 does not match this launch"));
  Config heads = gpt(2, 1);
  heads.model.heads = 3;
  heads.model.hidden = 12;
  CHECK_THROWS_WITH(plan_run(heads, 2, DataCheck::kSkip),
                    Contains("parallel.tensor: 2 does not divide model.heads=3"));
  Config mlp;
  mlp.parallel.tensor = 2;
  CHECK_THROWS_WITH(plan_run(mlp, 2, DataCheck::kSkip),
                    Contains("parallel.tensor: 2 is not supported by model.arch=mlp"));
  Config units;  // the MLP has no transformer units to lay buckets out by
  units.ddp.unit_buckets = true;
  CHECK_THROWS_WITH(plan_run(units, 1, DataCheck::kSkip),
                    Contains("ddp.unit_buckets: true ends buckets where a transformer block ends, "
                             "but model.arch is 'mlp' (set ddp.unit_buckets: false)"));
  CHECK_THROWS_WITH(plan_run(gpt(1, 1), 3, DataCheck::kSkip),
                    Contains("train.global_batch: 8 is not divisible by dp = 3"));
  Config micro = gpt(1, 1);
  micro.train.micro_batch = 3;
  CHECK_THROWS_WITH(plan_run(micro, 2, DataCheck::kSkip),
                    Contains("train.micro_batch: 3 does not divide the per-rank batch"));
  Config interleaved = gpt(1, 2);
  interleaved.schedule.name = ScheduleKind::kInterleaved;
  CHECK_THROWS_WITH(plan_run(interleaved, 2, DataCheck::kSkip),
                    Contains("schedule.chunks_per_rank: 1 is too few for the interleaved"));
  Config bounds = gpt(1, 2);
  bounds.schedule.layer_boundaries = {4};
  CHECK_THROWS_WITH(
      plan_run(bounds, 2, DataCheck::kSkip),
      Contains("schedule.layer_boundaries: [4] must increase strictly within (0, 4)"));
  Config microbatches = gpt(1, 2);
  microbatches.schedule.microbatches = 3;
  CHECK_THROWS_WITH(plan_run(microbatches, 2, DataCheck::kSkip),
                    Contains("schedule.microbatches: 3 disagrees with train.global_batch"));
  Config lr = gpt(1, 1);
  lr.train.min_lr = 1.0;
  CHECK_THROWS_WITH(plan_run(lr, 1, DataCheck::kSkip), Contains("train.min_lr: 1 is above"));
  Config group = gpt(1, 1);
  group.optimizer.shard_group = 2;
  CHECK_THROWS_WITH(plan_run(group, 4, DataCheck::kSkip),
                    Contains("optimizer.shard_group: 2 shards AdamW's state within groups of dp "
                             "ranks, but ddp.shard is none"));
  Config parameters = gpt(1, 1);
  parameters.ddp.shard = ShardLevel::kParameters;
  parameters.train.numerics = Numerics::kLayoutInvariant;
  CHECK_THROWS_WITH(plan_run(parameters, 1, DataCheck::kSkip),
                    Contains("ddp.shard: parameters reduce-scatters each micro-batch's gradients "
                             "as backward completes them, but train.numerics: layout_invariant"));
  Config kept = gpt(1, 1);
  kept.ddp.shard = ShardLevel::kGradients;
  kept.ddp.reshard_after_forward = false;
  CHECK_THROWS_WITH(plan_run(kept, 1, DataCheck::kSkip),
                    Contains("ddp.reshard_after_forward: false keeps gathered parameters, but "
                             "ddp.shard is gradients (parameters are whole on every rank); it "
                             "needs ddp.shard: parameters"));
  Config sgd = gpt(1, 1);
  sgd.ddp.shard = ShardLevel::kGradients;
  sgd.train.optimizer = OptimizerKind::kSgd;
  CHECK_THROWS_WITH(plan_run(sgd, 1, DataCheck::kSkip),
                    Contains("ddp.shard: gradients shards AdamW's state, but train.optimizer is "
                             "'sgd' (set train.optimizer: adamw, or ddp.shard: none)"));
  group.optimizer.shard = true;
  group.optimizer.shard_group = 3;
  group.train.global_batch = 16;
  CHECK_THROWS_WITH(plan_run(group, 4, DataCheck::kSkip),
                    Contains("optimizer.shard_group: 3 does not divide dp 4 (the groups of "
                             "consecutive dp ranks must tile the dp group); valid: 0 (all of dp), "
                             "1, 2, 4"));
  group.optimizer.shard_group = 2;
  CHECK_NOTHROW(plan_run(group, 4, DataCheck::kSkip));
  group.ddp.hierarchical = Hierarchical::kTrue;
  CHECK_THROWS_WITH(
      plan_run(group, 4, DataCheck::kSkip),
      Contains("ddp.hierarchical: true is a node-aware all-reduce over all of dp, but "
               "optimizer.shard_group: 2 < dp 4 already reduces within groups"));
}

TEST_CASE("parallel.context: a valid plan, and each refusal naming the key", "[plan]") {
  Config c = gpt(2, 1);
  c.parallel.context = 2;
  const RunPlan plan = plan_run(c, 8, DataCheck::kSkip);
  CHECK(plan.layout.dp_size() == 2);
  CHECK(plan.layout.cp_size() == 2);
  CHECK(plan.batch.local_batch == 4);  // the data is dealt over dp only
  CHECK((plan.activation_shape == std::vector<int64_t>{2, 4, 16}));  // seq_len / context
  CHECK_THAT(plan.describe(), Contains("world 8 = dp 2 x cp 2 x tp 2 x pp 1, order tp-cp-dp-pp") &&
                                  Contains("cp group 0: [0,2]") &&
                                  Contains("replica (dp x cp) group 0: [0,2,4,6]"));
  CHECK_THROWS_WITH(plan_run(c, 6, DataCheck::kSkip),
                    Contains("world size 6 is not divisible by parallel.context * "
                             "parallel.tensor * parallel.pipeline = 2 * 2 * 1 = 4"));
  Config length = gpt(1, 1);
  length.parallel.context = 3;
  CHECK_THROWS_WITH(plan_run(length, 3, DataCheck::kSkip),
                    Contains("parallel.context: 3 cuts every sequence into 2 x 3 = 6 chunks") &&
                        Contains("model.seq_len=8 is not a multiple of 6 (valid context sizes: "
                                 "1, 2, 4)"));
  Config heads = gpt(2, 1);
  heads.parallel.context = 4;
  heads.parallel.context_mode = ContextMode::kAllToAll;
  CHECK_THROWS_WITH(plan_run(heads, 8, DataCheck::kSkip),
                    Contains("parallel.context_mode: all_to_all gives each of the context x "
                             "tensor = 4 x 2 = 8 ranks whole heads, but model.heads=4"));
  heads.parallel.context_mode = ContextMode::kRing;
  CHECK_NOTHROW(plan_run(heads, 8, DataCheck::kSkip));
  Config dropout = gpt(1, 1);
  dropout.parallel.context = 2;
  dropout.model.dropout = 0.1;
  CHECK_THROWS_WITH(plan_run(dropout, 2, DataCheck::kSkip),
                    Contains("model.dropout: 0.1 is not supported with parallel.context: 2"));
  Config invariant = gpt(1, 1);
  invariant.parallel.context = 2;
  invariant.train.numerics = Numerics::kLayoutInvariant;
  CHECK_THROWS_WITH(plan_run(invariant, 2, DataCheck::kSkip),
                    Contains("train.numerics: layout_invariant is not extended to "
                             "parallel.context: 2"));
  Config mlp;
  mlp.parallel.context = 2;
  CHECK_THROWS_WITH(plan_run(mlp, 2, DataCheck::kSkip),
                    Contains("parallel.context: 2 splits language models' sequences; "
                             "model.arch is 'mlp'"));
  Config order = gpt(1, 1);
  order.parallel.context = 2;
  order.parallel.order = "dp-cp-tp-pp";
  CHECK(plan_run(order, 4, DataCheck::kSkip).layout.order_string() == "dp-cp-tp-pp");
  order.parallel.order = "dp-cp-tp";
  CHECK_THROWS_WITH(plan_run(order, 4, DataCheck::kSkip),
                    Contains("parallel.order: 'dp-cp-tp' lacks axis pp"));
}

TEST_CASE("the data is opened when asked, and its absence reported or refused", "[plan]") {
  Config c = gpt(1, 1);
  c.data.tokens = "/nonexistent";
  CHECK_THROWS_WITH(plan_run(c, 1, DataCheck::kOpen),
                    Contains("data.tokens: '/nonexistent' has no train.tok"));
  const RunPlan reported = plan_run(c, 1, DataCheck::kIfPresent);
  CHECK_FALSE(reported.has_data);
  CHECK_THAT(reported.describe(), Contains("data: data.tokens: '/nonexistent' has no train.tok"));
}

TEST_CASE(
    "layout-invariant numerics: plan_run refuses what would make the bits depend on the "
    "layout, and says the guarantee",
    "[plan]") {
  Config c = gpt(1, 1);  // global batch 8
  c.train.numerics = Numerics::kLayoutInvariant;
  c.train.global_batch = 12;
  c.train.micro_batch = 2;  // dp 2: 3 micro-batches per rank
  CHECK_THROWS_WITH(
      plan_run(c, 2, DataCheck::kSkip),
      Contains("train.micro_batch: 2 gives 3 micro-batches per rank") && Contains("valid: 3, 6"));
  CHECK_NOTHROW(plan_run(c, 1, DataCheck::kSkip));  // one process: 6 leaves, left-balanced
  c.train.micro_batch = 3;                          // dp 2: 2 each
  const RunPlan plan = plan_run(c, 2, DataCheck::kSkip);
  CHECK_THAT(plan.numerics_guarantee(),
             Contains("bit-identical to one process") && Contains("micro-batches of 3"));
  CHECK_THAT(plan.describe(), Contains("numerics: layout_invariant"));
  Config dropout = c;
  dropout.model.dropout = 0.1;
  CHECK_THROWS_WITH(plan_run(dropout, 2, DataCheck::kSkip),
                    Contains("model.dropout: 0.1") && Contains("model.dropout: 0"));
  Config wire = c;
  wire.ddp.reduce_dtype = Precision::kBf16;
  CHECK_THROWS_WITH(plan_run(wire, 2, DataCheck::kSkip), Contains("ddp.reduce_dtype: bf16"));
  Config unbucketed = c;
  unbucketed.ddp.bucketed = false;
  CHECK_THROWS_WITH(plan_run(unbucketed, 2, DataCheck::kSkip), Contains("ddp.bucketed is false"));
  Config per_sample = c;  // dp 2: 6 samples per rank, not a power of two
  per_sample.train.micro_batch_invariant = true;
  CHECK_THROWS_WITH(plan_run(per_sample, 2, DataCheck::kSkip),
                    Contains("train.global_batch: 12 gives 6 samples per rank (dp 2)") &&
                        Contains("valid train.global_batch: none with train.micro_batch: 3"));
  per_sample.train.micro_batch = 2;
  CHECK_THROWS_WITH(plan_run(per_sample, 2, DataCheck::kSkip),
                    Contains("valid train.global_batch: 4, 8, 16, 32"));
  per_sample.train.global_batch = 16;
  per_sample.train.micro_batch = 4;
  CHECK_THAT(plan_run(per_sample, 2, DataCheck::kSkip).numerics_guarantee(),
             Contains("and at any micro-batch size"));
  c.train.numerics = Numerics::kFast;
  CHECK_THAT(plan_run(c, 2, DataCheck::kSkip).numerics_guarantee(), Contains("numerics: fast"));
  per_sample.train.numerics = Numerics::kFast;
  CHECK_THROWS_WITH(plan_run(per_sample, 2, DataCheck::kSkip),
                    Contains("train.micro_batch_invariant: true") &&
                        Contains("train.numerics is fast") &&
                        Contains("set train.numerics: layout_invariant"));
}

TEST_CASE("run.device: cuda is refused where it cannot run, naming the key", "[plan][cuda_plan]") {
  Config cuda = gpt(1, 1);
  cuda.run.device = Device::kCuda;
  CHECK_NOTHROW(plan_run(cuda, 1, DataCheck::kSkip));  // the rules; the GPU is looked for later
  CHECK_THROWS_WITH(plan_run(cuda, 2, DataCheck::kSkip),
                    Contains("run.device: cuda trains on one rank in this version, but the job "
                             "has 2 ranks"));
  Config sharded = cuda;
  sharded.ddp.shard = ShardLevel::kOptimizer;
  CHECK_THROWS_WITH(plan_run(sharded, 1, DataCheck::kSkip),
                    Contains("run.device: cuda runs one rank, where there is nothing to shard "
                             "over, but ddp.shard is optimizer"));
  Config invariant = cuda;
  invariant.train.numerics = Numerics::kLayoutInvariant;
  CHECK_THROWS_WITH(plan_run(invariant, 1, DataCheck::kSkip),
                    Contains("train.numerics: layout_invariant promises the CPU path's bits"));
  Config mlp = cuda;
  mlp.model.arch = ModelKind::kMlp;
  mlp.train.optimizer = OptimizerKind::kSgd;
  CHECK_THROWS_WITH(
      plan_run(mlp, 1, DataCheck::kSkip),
      Contains("run.device: cuda is supported for model.arch: gpt, llama, not 'mlp'"));
  if (!torch::cuda::is_available()) {
    CHECK_THROWS_AS(compute_device(Device::kCuda, 0), ConfigError);
    CHECK_THROWS_WITH(
        compute_device(Device::kCuda, 0),
        Contains("run.device: cuda needs a CUDA device, but this process sees none") &&
            Contains("Valid here: run.device: cpu"));
  }
  CHECK(compute_device(Device::kCpu, 3) == torch::Device(torch::kCPU));
}
