#include "data/gpt_corpus.h"

#include <fstream>

#include "core/error.h"

namespace triax {

GptCorpus GptCorpus::open(const std::string& tokens_dir, int64_t seq_len, int64_t vocab) {
  for (const std::string& path : {train_path(tokens_dir), val_path(tokens_dir)}) {
    if (!std::ifstream(path)) {
      throw ConfigError(
          str("data.tokens: '", tokens_dir, "' has no ", path.substr(path.rfind('/') + 1),
              " (valid: a folder written by `triax prepare-data TEXT... --out ", tokens_dir, "`)"));
    }
  }
  try {
    return GptCorpus{TokenSequences(train_path(tokens_dir), seq_len, vocab),
                     TokenSequences(val_path(tokens_dir), seq_len, vocab)};
  } catch (const ConfigError&) {
    throw;
  } catch (const Error& e) {
    throw ConfigError(str("data.tokens: ", e.what()));
  }
}

}  // namespace triax
