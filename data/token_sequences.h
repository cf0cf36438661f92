// defines: triax::TokenSequences
//
// A token file seen as a dataset of fixed-length training samples: sample i is the window of
// seq_len + 1 tokens starting at i * seq_len (inputs are its first seq_len tokens, targets its
// last seq_len). Consecutive windows share one token, so every token but the first is a target
// exactly once per epoch. Indexed samples are what the distributed sampler shards over dp.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#include "data/token_file.h"

namespace triax {

class TokenSequences {
 public:
  /// Throws ConfigError when the file holds less than one sample or its vocabulary exceeds
  /// `model_vocab` (naming both keys).
  TokenSequences(const std::string& path, int64_t seq_len, int64_t model_vocab);

  int64_t size() const { return samples_; }
  int64_t seq_len() const { return seq_len_; }
  const TokenFile& file() const { return file_; }

  /// The samples at `indices`, as int64 [indices.size(), seq_len + 1].
  torch::Tensor batch(const int64_t* indices, int64_t count) const;

 private:
  TokenFile file_;
  int64_t seq_len_;
  int64_t samples_;
};

}  // namespace triax
