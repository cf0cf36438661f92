#include "data/local_batches.h"

#include "core/error.h"

namespace triax {

LocalBatches::LocalBatches(const TokenSequences& data, int64_t global_batch, int dp_size,
                           int dp_rank, bool shuffle, int64_t seed)
    : data_(data),
      sampler_(DistributedSamplerOptions{data.size(), dp_size, dp_rank, shuffle, seed, false}),
      local_batch_(global_batch / dp_size),
      per_epoch_(data.size() / global_batch) {
  TRIAX_CHECK(global_batch % dp_size == 0 && per_epoch_ > 0, "global batch ", global_batch,
              " over dp ", dp_size, " for ", data.size(), " samples");
}

torch::Tensor LocalBatches::local(int64_t k) {
  const int64_t epoch = k / per_epoch_;
  if (epoch != epoch_) {
    sampler_.set_epoch(epoch);
    indices_ = sampler_.indices();
    epoch_ = epoch;
  }
  return data_.batch(indices_.data() + (k % per_epoch_) * local_batch_, local_batch_);
}

}  // namespace triax
