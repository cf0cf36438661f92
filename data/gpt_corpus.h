// defines: triax::GptCorpus
//
// The GPT's two token files, data.tokens/train.tok and data.tokens/val.tok, opened once per
// rank: each is memory-mapped and its checksum verified when opened (data/token_file.h), and
// the same mapping then serves the whole run. Opening them is part of the run's plan, before any
// communication, so a missing or damaged file is one clear error per rank naming data.tokens.
#pragma once

#include <string>

#include "data/token_sequences.h"

namespace triax {

struct GptCorpus {
  TokenSequences train;
  TokenSequences val;

  /// Throws ConfigError naming data.tokens (or model.seq_len / model.vocab) when a file is
  /// missing, damaged, too short or of a larger vocabulary.
  static GptCorpus open(const std::string& tokens_dir, int64_t seq_len, int64_t vocab);
  static std::string train_path(const std::string& tokens_dir) { return tokens_dir + "/train.tok"; }
  static std::string val_path(const std::string& tokens_dir) { return tokens_dir + "/val.tok"; }
};

}  // namespace triax
