#include "data/distributed_sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "core/error.h"

namespace triax {

DistributedSampler::DistributedSampler(DistributedSamplerOptions options) : options_(options) {
  TRIAX_CHECK(options_.num_replicas >= 1, "num_replicas=", options_.num_replicas);
  TRIAX_CHECK(options_.rank >= 0 && options_.rank < options_.num_replicas, "rank=", options_.rank,
              " not in [0, ", options_.num_replicas, ")");
  TRIAX_CHECK(options_.dataset_size >= 0, "dataset_size=", options_.dataset_size);
  const int64_t n = options_.dataset_size;
  const int64_t replicas = options_.num_replicas;
  // PyTorch: ceil((n - replicas) / replicas) when dropping an uneven tail, else ceil(n / replicas).
  if (options_.uneven) {
    num_samples_ = n > options_.rank ? (n - options_.rank + replicas - 1) / replicas : 0;
  } else if (options_.drop_last && n % replicas != 0) {
    num_samples_ = n >= replicas ? (n - replicas + replicas - 1) / replicas : 0;
  } else {
    num_samples_ = (n + replicas - 1) / replicas;
  }
}

int64_t DistributedSampler::total_size() const {
  if (options_.uneven) return options_.dataset_size;
  const int64_t replicas = options_.num_replicas;
  const int64_t n = options_.dataset_size;
  if (options_.drop_last && n % replicas != 0) return n >= replicas ? n / replicas * replicas : 0;
  return (n + replicas - 1) / replicas * replicas;
}

torch::Tensor DistributedSampler::local_rows(const torch::Tensor& global_batch, int rank,
                                             int replicas) {
  TRIAX_CHECK(global_batch.size(0) % replicas == 0, "a global batch of ", global_batch.size(0),
              " rows does not split over ", replicas, " replicas");
  return global_batch.slice(0, rank, global_batch.size(0), replicas);
}

torch::Tensor DistributedSampler::block_rows(const torch::Tensor& global_batch, int rank,
                                             int replicas) {
  TRIAX_CHECK(global_batch.size(0) % replicas == 0, "a global batch of ", global_batch.size(0),
              " rows does not split over ", replicas, " replicas");
  const int64_t rows = global_batch.size(0) / replicas;
  return global_batch.narrow(0, rank * rows, rows);
}

std::vector<int64_t> DistributedSampler::indices() const {
  const int64_t n = options_.dataset_size;
  std::vector<int64_t> all(static_cast<size_t>(n));
  if (options_.shuffle) {
    auto generator = at::detail::createCPUGenerator(static_cast<uint64_t>(options_.seed + epoch_));
    const torch::Tensor perm = torch::randperm(n, generator, torch::kLong);
    const int64_t* data = perm.data_ptr<int64_t>();
    all.assign(data, data + n);
  } else {
    for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
  }
  const int64_t total = total_size();
  if (total > n && n > 0) {
    // Pad by repeating from the start (whole copies first when the padding exceeds n).
    std::vector<int64_t> padded = all;
    while (static_cast<int64_t>(padded.size()) < total) {
      const int64_t take = std::min<int64_t>(n, total - static_cast<int64_t>(padded.size()));
      padded.insert(padded.end(), all.begin(), all.begin() + take);
    }
    all.swap(padded);
  }
  all.resize(static_cast<size_t>(total));
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (int64_t i = options_.rank; i < total; i += options_.num_replicas) {
    mine.push_back(all[static_cast<size_t>(i)]);
  }
  return mine;
}

}  // namespace triax
