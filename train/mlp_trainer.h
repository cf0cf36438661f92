// defines: triax::MlpTrainer, triax::TrainResult
//
// Data-parallel training of the Fashion-MNIST MLP. Each step takes the next global batch of
// the (per-epoch shuffled) training set: this rank's share comes from the DistributedSampler
// (Note [Global batch equivalence]), in micro-batches whose losses are scaled by 1/local_batch
// and accumulated; the gradients are averaged over the DP group by the same GradientSync as the
// GPT's (buckets all-reduced during the last micro-batch's backward), so every rank applies the
// gradient of the mean loss over the whole global batch, exactly as a single process would.
// Epochs run floor(train_samples / global_batch) steps: an incomplete last global batch is
// dropped, as it would change the step's semantics with dp.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/mlp.h"
#include "parallel/dp/gradient_sync.h"
#include "parallel/parallel_context.h"
#include "train/run_plan.h"

namespace triax {

struct TrainResult {
  int64_t steps = 0;                ///< optimizer steps taken
  std::vector<double> step_losses;  ///< mean loss over each step's global batch (every rank)
  double test_accuracy = 0;         ///< fraction correct on the test split (every rank)
  int64_t test_samples = 0;         ///< test samples evaluated
  double train_seconds = 0;         ///< wall time of the training steps (no data loading/eval)
  double samples_per_second = 0;    ///< global training samples per second
};

class MlpTrainer {
 public:
  /// Builds the model (same seed on every rank, then broadcast from dp 0) over the plan's data.
  MlpTrainer(const RunPlan& plan, ParallelContext& context);

  TrainResult train();
  /// Fraction of the test split classified correctly, each sample scored once by one dp rank
  /// (the sampler's split, unshuffled and unpadded).
  double evaluate(int64_t* samples_out = nullptr);

  Mlp& model() { return model_; }
  const BatchPlan& plan() const { return plan_.batch; }
  int64_t steps_per_epoch() const { return plan_.data.steps_per_epoch; }

 private:
  double train_step(const std::vector<int64_t>& rank_indices, int64_t step_in_epoch);

  RunPlan plan_;
  ParallelContext& context_;
  const FashionMnist& train_data_;
  const FashionMnist& test_data_;
  Mlp model_{nullptr};
  std::unique_ptr<GradientSync> sync_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace triax
