// defines: triax::DistributedSamplerOptions, triax::DistributedSampler
//
// PyTorch's torch.utils.data.DistributedSampler, exactly: the same permutation for the same
// seed + epoch (torch.randperm on a CPU generator), the same padding by repetition when not
// dropping, the same strided split indices[rank : total_size : num_replicas].
//
// Why strided matters (Note [Global batch equivalence]): rank r's k-th local batch of b samples
// holds positions r + j*dp for j in [k*b, (k+1)*b). Over all dp ranks these are exactly the
// positions [k*B, (k+1)*B) with B = b*dp, i.e. the k-th global batch of the sequential run,
// shuffles included. So a step at any dp sees the same samples as the step at dp = 1.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace triax {

struct DistributedSamplerOptions {
  int64_t dataset_size = 0;  ///< samples in the dataset
  int num_replicas = 1;      ///< data-parallel ranks
  int rank = 0;              ///< this rank's index among them
  bool shuffle = true;       ///< permute every epoch with seed + epoch
  int64_t seed = 0;          ///< base seed of the permutation
  bool drop_last = false;    ///< drop the tail instead of padding to a multiple of num_replicas
  /// Neither pad nor drop: every sample exactly once, the last ranks one fewer (evaluation
  /// that counts each sample once; not PyTorch's behaviour). Overrides drop_last.
  bool uneven = false;
};

class DistributedSampler {
 public:
  explicit DistributedSampler(DistributedSamplerOptions options);

  /// Selects the epoch's permutation (seed + epoch), as PyTorch's set_epoch.
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

  /// This rank's sample indices for the current epoch, in order.
  std::vector<int64_t> indices() const;

  /// Samples of this rank per epoch.
  int64_t num_samples() const { return num_samples_; }

  /// This rank's rows of one global batch already in sequential order: rows rank, rank +
  /// replicas, ... — the same split indices() makes, for callers holding the whole batch.
  static torch::Tensor local_rows(const torch::Tensor& global_batch, int rank, int replicas);
  /// The other deal, of layout-invariant numerics (docs/numerics.md): rank r takes the r-th of
  /// `replicas` equal contiguous blocks of the global batch, so its micro-batch j is the global
  /// batch's micro-batch r * (local micro-batches) + j, the same rows at every dp.
  static torch::Tensor block_rows(const torch::Tensor& global_batch, int rank, int replicas);
  /// Positions of the epoch's order that are dealt out (padded or cut to a multiple of the
  /// replicas, or exactly the dataset when uneven).
  int64_t total_size() const;

 private:
  DistributedSamplerOptions options_;
  int64_t num_samples_ = 0;
  int64_t epoch_ = 0;
};

}  // namespace triax
