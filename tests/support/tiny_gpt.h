// The tiny GPT that the multi-rank tests train in every layout: small enough that 8
// oversubscribed ranks run it in seconds, with a vocabulary (13) that tp = 2 must pad, and
// two fixed random batches in turn, which a model that trains fits.
#pragma once

#include <torch/torch.h>

#include <string>

#include "core/config.h"
#include "data/distributed_sampler.h"
#include "models/gpt_spec.h"
#include "parallel/parallel_context.h"
#include "train/run_plan.h"

namespace triax::testing {

inline Config tiny_gpt_config(int tp, int pp, const std::string& schedule, int chunks) {
  Config c;
  c.model.arch = ModelKind::kGpt;
  c.model.vocab = 13;  // padded at tp = 2
  c.model.hidden = 16;
  c.model.heads = 4;
  c.model.layers = 4;
  c.model.seq_len = 8;
  c.parallel.tensor = tp;
  c.parallel.pipeline = pp;
  c.train.global_batch = 8;
  c.train.micro_batch = 2;
  c.train.optimizer = OptimizerKind::kAdamW;
  c.train.lr = 3e-3;
  c.train.clip_grad = 0.5;
  c.train.seed = 17;
  c.schedule.name = choice_from<ScheduleKind>(schedule);
  c.schedule.chunks_per_rank = chunks;
  c.ddp.bucket_mb = 0.002;  // several buckets even for a tiny model
  return c;
}

/// The run plan of `c` for `context`'s layout, without data (the tests feed batches themselves).
inline RunPlan plan_for(const Config& c, const ParallelContext& context) {
  return plan_run(c, context.world_size(), DataCheck::kSkip);
}

/// Global batch `step` (one of two, in turn): token sequences [global_batch, seq_len + 1] as a
/// batch (models/gpt_spec.h).
inline Batch tiny_gpt_batch(int step, const Config& c) {
  torch::manual_seed(1000 + step % 2);
  return token_batch(
      torch::randint(0, c.model.vocab, {c.train.global_batch, c.model.seq_len + 1}, torch::kLong));
}

/// This dp rank's rows of a global batch (as the distributed sampler deals them).
inline Batch local_share(const Batch& global, const ParallelContext& context) {
  return Batch{
      DistributedSampler::local_rows(global.inputs, context.dp_rank(), context.dp_size()),
      DistributedSampler::local_rows(global.targets, context.dp_rank(), context.dp_size())};
}

}  // namespace triax::testing
