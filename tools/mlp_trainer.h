// defines: triax::MlpTrainer, triax::TrainResult, triax::check_mlp_layout
//
// Data-parallel training of the Fashion-MNIST MLP. Each step takes the next global batch of
// the (per-epoch shuffled) training set: this rank's share comes from the DistributedSampler
// (Note [Global batch equivalence]), in micro-batches whose losses are scaled by 1/local_batch
// and accumulated; gradients are then averaged over the DP group, so every rank applies the
// gradient of the mean loss over the whole global batch, exactly as a single process would.
// Epochs run floor(train_samples / global_batch) steps: an incomplete last global batch is
// dropped, as it would change the step's semantics with dp.
#pragma once

#include <cstdint>
#include <vector>

#include "core/batch_plan.h"
#include "core/config.h"
#include "core/fashion_mnist.h"
#include "models/mlp.h"
#include "parallel/parallel_context.h"

namespace triax {

/// Throws ConfigError if `config` asks for something the MLP cannot do (tensor or pipeline
/// parallelism); call before any communication.
void check_mlp_layout(const Config& config);

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
  /// Loads the data and builds the model (same seed on every rank, then broadcast from dp 0).
  MlpTrainer(const Config& config, ParallelContext& context);

  TrainResult train();
  /// Fraction of the test split classified correctly, evaluated in shards over the DP group.
  double evaluate(int64_t* samples_out = nullptr);

  Mlp& model() { return model_; }
  const BatchPlan& plan() const { return plan_; }
  int64_t steps_per_epoch() const { return steps_per_epoch_; }

 private:
  double train_step(const std::vector<int64_t>& rank_indices, int64_t step_in_epoch);

  Config config_;
  ParallelContext& context_;
  BatchPlan plan_;
  FashionMnist train_data_;
  FashionMnist test_data_;
  Mlp model_{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  int64_t steps_per_epoch_ = 0;
};

}  // namespace triax
