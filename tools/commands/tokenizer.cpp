// `triax tokenizer train|encode|decode`.
#include "tools/commands/command.h"

#include <cstdio>

#include "core/strings.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/tokenizer.h"

namespace triax {

int run_tokenizer(const CliArgs& args, int* /*argc*/, char*** /*argv*/) {
  const std::string& action = args.inputs[0];
  if (action == "train") {
    SentencePieceTraining training;
    training.inputs.assign(args.inputs.begin() + 1, args.inputs.end());
    training.out_prefix = args.out;
    training.vocab_size = args.vocab_size;
    training.model_type = args.model_type;
    const std::string model = train_sentencepiece(training);
    const auto trained = load_tokenizer(model);
    std::printf("trained %s; prepare data with --tokenizer %s\n", trained->describe().c_str(),
                model.c_str());
    return 0;
  }
  TokenizerOptions options;
  options.tiktoken_pattern = args.pattern;
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(args.inputs[1], options);
  std::string input;  // stdin, read with stdio (see tokenizer/sentencepiece_shim.cpp on iostreams)
  char buffer[1 << 16];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0;) input.append(buffer, n);
  if (action == "encode") {
    std::printf("%s\n", join(tokenizer->encode(input, true), " ").c_str());
    return 0;
  }
  std::vector<int32_t> ids;
  for (const std::string& word : split(input, ' ')) {
    if (word.find_first_not_of(" \n\t") != std::string::npos) ids.push_back(std::stoi(word));
  }
  const std::string text = tokenizer->decode(ids);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace triax
