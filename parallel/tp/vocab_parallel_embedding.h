// defines: triax::VocabParallelEmbeddingOptions, VocabParallelEmbeddingImpl,
//          VocabParallelEmbedding, triax::padded_vocab_size
//
// An embedding table split by rows (vocabulary) over tp ranks: rank i holds ids
// [i*V/p, (i+1)*V/p). Each rank looks up the ids it owns, writes zeros for the others, and g
// (reduce_from_tp_region) sums the ranks' partial outputs into the full embedding.
// A vocabulary that tp does not divide is padded with zero rows up to a multiple of tp; no valid
// id reaches a padding row, so padding never changes outputs, gradients or the loss.
#pragma once

#include <torch/torch.h>

#include "parallel/comm/communicator.h"
#include "parallel/tp/shard_spec.h"

namespace triax {

/// `vocab` rounded up to a multiple of `tp`.
int64_t padded_vocab_size(int64_t vocab, int tp);

struct VocabParallelEmbeddingOptions {
  VocabParallelEmbeddingOptions(int64_t vocab_size, int64_t embedding_dim)
      : vocab_size_(vocab_size), embedding_dim_(embedding_dim) {}
  TORCH_ARG(int64_t, vocab_size);      ///< real vocabulary (ids in [0, vocab_size))
  TORCH_ARG(int64_t, embedding_dim);   ///< features per token
  TORCH_ARG(double, init_std) = 0.02;  ///< weights ~ N(0, init_std^2)
  /// This table is also the output head (tied): its gradient is summed over its copies.
  TORCH_ARG(bool, tied) = false;
  /// This table is the second copy of the tied weight (the head's on the last pipeline stage).
  TORCH_ARG(bool, tied_copy) = false;
};

class VocabParallelEmbeddingImpl : public torch::nn::Module, public ShardedModule {
 public:
  VocabParallelEmbeddingImpl(const VocabParallelEmbeddingOptions& options, Communicator& tp);
  /// ids [...] (int64, in [0, vocab_size)) -> [..., embedding_dim].
  torch::Tensor forward(const torch::Tensor& ids);
  std::map<std::string, ShardSpec> shard_specs() const override;
  std::vector<std::string> tied_parameters() const override;
  std::vector<std::string> tied_copies() const override;
  int64_t vocab_start() const { return vocab_start_; }  ///< first id this rank holds
  int64_t vocab_size() const { return options_.vocab_size(); }

  torch::Tensor weight;  ///< [padded_vocab / tp, embedding_dim]

 private:
  VocabParallelEmbeddingOptions options_;
  Communicator* tp_;
  ShardSpec spec_;
  int64_t vocab_start_ = 0;
};
TORCH_MODULE(VocabParallelEmbedding);

}  // namespace triax
