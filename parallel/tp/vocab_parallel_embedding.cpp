#include "parallel/tp/vocab_parallel_embedding.h"

#include "core/bf16_matmul.h"
#include "core/error.h"
#include "parallel/tp/tp_mappings.h"

namespace triax {

int64_t padded_vocab_size(int64_t vocab, int tp) {
  return (vocab + tp - 1) / tp * tp;
}

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(const VocabParallelEmbeddingOptions& options,
                                                       Communicator& tp)
    : options_(options), tp_(&tp) {
  const int64_t vocab = options_.vocab_size();
  spec_ = ShardSpec{0, 1, vocab, padded_vocab_size(vocab, tp.size())};
  vocab_start_ = tp.rank() * (spec_.padded_size / tp.size());
  torch::NoGradGuard no_grad;
  const torch::Tensor full =
      torch::randn({vocab, options_.embedding_dim()}).mul_(options_.init_std());  // one copy
  weight = register_parameter("weight", shard_of(full, spec_, tp.rank(), tp.size()));
}

torch::Tensor VocabParallelEmbeddingImpl::forward(const torch::Tensor& ids) {
  TRIAX_CHECK(ids.numel() == 0 || (ids.min().item<int64_t>() >= 0 &&
                                   ids.max().item<int64_t>() < options_.vocab_size()),
              "token ids must lie in [0, ", options_.vocab_size(), ")");
  // Rows of bf16 working weights (train.param_dtype: bf16) are widened to fp32, exactly: the
  // residual stream is fp32 (their gradient is summed in fp32 and rounded once).
  const auto rows_of = [](const torch::Tensor& table, const torch::Tensor& at) {
    return mixed_embedding(table, at);
  };
  if (tp_->size() == 1) return rows_of(weight, ids);  // every id is this rank's
  const int64_t rows = weight.size(0);
  const torch::Tensor outside = (ids < vocab_start_).logical_or(ids >= vocab_start_ + rows);
  const torch::Tensor local = (ids - vocab_start_).masked_fill(outside, 0);
  const torch::Tensor out = rows_of(weight, local).masked_fill(outside.unsqueeze(-1), 0.0);
  return reduce_from_tp_region(out, *tp_);
}

std::map<std::string, ShardSpec> VocabParallelEmbeddingImpl::shard_specs() const {
  return {{"weight", spec_}};
}

std::vector<std::string> VocabParallelEmbeddingImpl::tied_parameters() const {
  if (options_.tied()) return {"weight"};
  return {};
}

std::vector<std::string> VocabParallelEmbeddingImpl::tied_copies() const {
  if (options_.tied_copy()) return {"weight"};
  return {};
}

}  // namespace triax
