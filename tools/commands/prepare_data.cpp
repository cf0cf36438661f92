// `triax prepare-data INPUT... --out DIR`: text -> token files.
#include "tools/commands/command.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "data/prepare_data.h"
#include "tokenizer/tokenizer.h"

namespace triax {

int run_prepare_data(const CliArgs& args, int* /*argc*/, char*** /*argv*/) {
  TokenizerOptions options;
  options.tiktoken_pattern = args.pattern;
  const std::unique_ptr<Tokenizer> tokenizer =
      load_tokenizer(args.tokenizer.empty() ? "bytes" : args.tokenizer, options);
  const int threads =
      args.threads > 0 ? args.threads : static_cast<int>(std::thread::hardware_concurrency());
  const PreparedData data =
      prepare_text_data(args.inputs, args.out, args.val_fraction, *tokenizer, threads);
  // A folder like /usr/share/games/fortunes skips dozens of index files and links: name a few.
  constexpr size_t kShown = 3;
  for (size_t i = 0; i < std::min(kShown, data.skipped.size()); ++i) {
    std::printf("skipped %s\n", data.skipped[i].c_str());
  }
  if (data.skipped.size() > kShown) {
    std::printf("skipped %zu more non-text files or links\n", data.skipped.size() - kShown);
  }
  const double tokens = static_cast<double>(data.train_tokens + data.val_tokens);
  std::printf(
      "%lld text files -> %s/train.tok (%lld tokens), %s/val.tok (%lld tokens); %s, "
      "vocabulary %lld; %.0f tokens/s on %d thread(s)\n",
      static_cast<long long>(data.files), args.out.c_str(),
      static_cast<long long>(data.train_tokens), args.out.c_str(),
      static_cast<long long>(data.val_tokens), tokenizer->describe().c_str(),
      static_cast<long long>(data.vocab), data.seconds > 0 ? tokens / data.seconds : 0.0, threads);
  if (!args.tokenizer.empty()) {
    std::printf("train with --set data.tokens=%s --set data.tokenizer=%s --set model.vocab=%lld\n",
                args.out.c_str(), args.tokenizer.c_str(), static_cast<long long>(data.vocab));
  }
  return 0;
}

}  // namespace triax
