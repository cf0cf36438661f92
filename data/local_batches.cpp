#include "data/local_batches.h"

#include "core/error.h"

namespace triax {

LocalBatches::LocalBatches(const TokenSequences& data, int64_t global_batch, int dp_size,
                           int dp_rank, bool shuffle, int64_t seed, bool blocks)
    : data_(data),
      // With blocks the sampler deals everything to one replica: the epoch's order itself.
      sampler_(DistributedSamplerOptions{data.size(), blocks ? 1 : dp_size, blocks ? 0 : dp_rank,
                                         shuffle, seed, false}),
      global_batch_(global_batch),
      local_batch_(global_batch / dp_size),
      per_epoch_(data.size() / global_batch) {
  TRIAX_CHECK(global_batch % dp_size == 0 && per_epoch_ > 0, "global batch ", global_batch,
              " over dp ", dp_size, " for ", data.size(), " samples");
  if (blocks) block_start_ = dp_rank * local_batch_;
}

int64_t LocalBatches::first_row(int64_t k) {
  const int64_t epoch = k / per_epoch_;
  if (epoch != epoch_) {
    sampler_.set_epoch(epoch);
    indices_ = sampler_.indices();
    epoch_ = epoch;
  }
  return block_start_ >= 0 ? (k % per_epoch_) * global_batch_ + block_start_
                           : (k % per_epoch_) * local_batch_;
}

torch::Tensor LocalBatches::local(int64_t k) {
  const int64_t first = first_row(k);
  return data_.batch(indices_.data() + first, local_batch_);
}

torch::Tensor LocalBatches::sample_ids(int64_t k) {
  const int64_t first = first_row(k);
  return torch::tensor(
      std::vector<int64_t>(indices_.begin() + first, indices_.begin() + first + local_batch_),
      torch::kLong);
}

}  // namespace triax
