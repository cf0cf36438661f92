// defines: triax::PrefixCache
//
// AutoCache (PipeTransformer; docs/relayout.md): once the bottom layers and the embedding are
// frozen, their output for a training sample never changes, so the first stage can keep it and
// start the next epoch's forward at the first active layer. A model chunk asks the cache before
// running its frozen layers and hands it what it computed for the samples it missed; where the
// rows live (train/prefix_cache.h) is not the model's business.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace triax {

class PrefixCache {
 public:
  virtual ~PrefixCache() = default;
  /// How many layers (from layer 0, after the embedding) the cached rows have been through.
  virtual int64_t layers() const = 0;
  /// The cached rows of `samples` (training-set indices, [n] int64 on the CPU; `inputs` their
  /// token rows, checked against what each row was computed from): `hidden` is filled where
  /// the returned [n] bool mask is true. The mask is the same on every rank that computes these
  /// rows together (tensor and context parallel): a collective over them, so every such rank runs
  /// the frozen layers for the same rows.
  virtual torch::Tensor fetch(const torch::Tensor& samples, const torch::Tensor& inputs,
                              torch::Tensor* hidden) = 0;
  /// Keeps `hidden` ([n, ...] on any device), the output of the cached layers for `samples`
  /// computed from `inputs`.
  virtual void store(const torch::Tensor& samples, const torch::Tensor& inputs,
                     const torch::Tensor& hidden) = 0;
};

}  // namespace triax
