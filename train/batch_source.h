// defines: triax::EvalBatch, triax::BatchSource, triax::make_batch_source
//
// Where a run's batches come from: this dp rank's share of each global batch of the training
// set (Note [Global batch equivalence]: the distributed sampler deals the rows, so their union
// over ranks is the same at any dp), and the batches of one evaluation. The one place that
// switches on the model's data (everything else about a model is its spec,
// models/model_spec.h):
//   GPT  token sequences (data/local_batches.h): global batch k of an epoch is positions
//        [k*B, (k+1)*B) of the epoch's order (shuffled with seed + epoch); evaluation reads the
//        first eval_batches global batches of the held-out split unshuffled, in training
//        micro-batches, so every evaluation scores the same sequences;
//   MLP  images: the same dealing over the Fashion-MNIST training split; evaluation scores every
//        test image exactly once (the last ranks one fewer), in batches of up to 1000.
#pragma once

#include <memory>

#include "models/model_spec.h"
#include "train/run_plan.h"

namespace triax {

/// This rank's share of one evaluation batch, and the micro-batches to cut it into.
struct EvalBatch {
  Batch batch;
  int microbatches = 1;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  /// This rank's rows of global batch `step` (0-based, counted across epochs).
  virtual Batch train_batch(int64_t step) = 0;
  /// Batches of one evaluation (on this rank: it may hold fewer rows than others).
  virtual int64_t eval_batches() const = 0;
  virtual EvalBatch eval_batch(int64_t k) = 0;
  /// Whether evaluation batch k is dealt in contiguous blocks of equal micro-batches on every rank
  /// (layout-invariant numerics then sum its metrics in global order: Trainer::evaluation_mean).
  virtual bool eval_in_blocks() const { return false; }
};

/// The batches of `plan`'s data (opened) for dp rank `dp_rank`.
std::unique_ptr<BatchSource> make_batch_source(const RunPlan& plan, int dp_rank);

}  // namespace triax
