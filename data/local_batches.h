// defines: triax::LocalBatches
//
// This dp rank's share of each global batch of a token dataset, step by step: global batch k of
// an epoch is positions [k*B, (k+1)*B) of the epoch's order (shuffled with seed + epoch, or the
// file's order), and the distributed sampler deals this rank its strided rows of it (Note
// [Global batch equivalence]), so the union over ranks is the same at any dp. Training reads
// the training split shuffled; evaluation reads the held-out split unshuffled, so every
// evaluation scores the same sequences. With `blocks`, the rank takes instead the r-th contiguous
// block of each global batch (DistributedSampler::block_rows: layout-invariant numerics); the
// global batches are the same either way.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "data/distributed_sampler.h"
#include "data/token_sequences.h"

namespace triax {

class LocalBatches {
 public:
  /// `global_batch` must be a multiple of `dp_size` and at most the dataset's size.
  LocalBatches(const TokenSequences& data, int64_t global_batch, int dp_size, int dp_rank,
               bool shuffle, int64_t seed, bool blocks = false);

  /// Global batches per epoch: floor(samples / global_batch) (an incomplete tail is dropped).
  int64_t per_epoch() const { return per_epoch_; }
  /// This rank's rows of global batch `k` (counted from the start of training, across epochs):
  /// [global_batch / dp, seq_len + 1] int64.
  torch::Tensor local(int64_t k);
  /// The training-set indices of those rows, in order: [global_batch / dp] int64.
  torch::Tensor sample_ids(int64_t k);

 private:
  const TokenSequences& data_;
  DistributedSampler sampler_;
  int64_t global_batch_;
  int64_t local_batch_;
  int64_t per_epoch_;
  int64_t block_start_ = -1;  ///< with blocks: this rank's first row in each global batch
  /// This rank's first position in the epoch's order for global batch `k` (the epoch's order
  /// drawn when it changes).
  int64_t first_row(int64_t k);
  int64_t epoch_ = -1;
  std::vector<int64_t> indices_;
};

}  // namespace triax
