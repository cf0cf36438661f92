#include "data/token_sequences.h"

#include "core/error.h"

namespace triax {

TokenSequences::TokenSequences(const std::string& path, int64_t seq_len, int64_t model_vocab)
    : file_(path), seq_len_(seq_len), samples_((file_.size() - 1) / seq_len) {
  if (samples_ < 1) {
    throw ConfigError(str("model.seq_len: ", seq_len, " needs ", seq_len + 1,
                          " tokens per sample but ", path, " holds ", file_.size(),
                          " (valid: at most ", file_.size() - 1, ", or prepare more text)"));
  }
  if (file_.vocab() > model_vocab) {
    throw ConfigError(str("model.vocab: ", model_vocab, " is smaller than the vocabulary of ", path,
                          " (", file_.vocab(), "; valid: >= ", file_.vocab(), ")"));
  }
}

torch::Tensor TokenSequences::batch(const int64_t* indices, int64_t count) const {
  torch::Tensor out = torch::empty({count, seq_len_ + 1}, torch::kLong);
  for (int64_t i = 0; i < count; ++i) {
    TRIAX_CHECK(indices[i] >= 0 && indices[i] < samples_, "sample ", indices[i], " outside [0, ",
                samples_, ")");
    out[i].copy_(file_.read(indices[i] * seq_len_, seq_len_ + 1));
  }
  return out;
}

}  // namespace triax
