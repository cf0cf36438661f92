// `triax generate CHECKPOINT --prompt TEXT`: greedy continuation on one process.
#include "tools/commands/command.h"

#include <cstdio>
#include <vector>

#include "checkpoint/convert.h"
#include "checkpoint/resume.h"
#include "core/autocast_scope.h"
#include "core/bf16_matmul.h"
#include "core/error.h"
#include "core/mixed_precision.h"
#include "core/strings.h"
#include "models/model_spec.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/mpi_runtime.h"
#include "tokenizer/tokenizer.h"
#include "train/text_generator.h"

namespace triax {

namespace {

// The prompt and `count` greedy tokens after it, by the whole model on one process.
std::vector<int64_t> greedy_continuation(const FullModelState& state,
                                         const std::vector<int64_t>& prompt, int64_t count) {
  const Config& config = state.config;
  TRIAX_CHECK(model_spec(config.model.arch).generates_text, "model.arch ",
              choice_name(config.model.arch), " does not generate text");
  const MixedPrecision precision(config);
  precision.select_matmul_path();
  auto single = MpiCommunicator::self();
  const std::unique_ptr<ModelChunk> model = whole_model(state, *single);
  torch::NoGradGuard no_grad;
  std::vector<int64_t> tokens = prompt;
  const int64_t seq = config.model.seq_len;
  for (int64_t n = 0; n < count; ++n) {
    const int64_t length = std::min<int64_t>(static_cast<int64_t>(tokens.size()), seq);
    const torch::Tensor window =
        torch::tensor(std::vector<int64_t>(tokens.end() - length, tokens.end()), torch::kLong)
            .unsqueeze(0);
    const Batch batch{window, window};
    const auto scope = precision.compute_scope();
    const torch::Tensor logits =
        model->logits(model->forward(torch::Tensor(), batch)).to(torch::kFloat);
    // The real vocabulary only (tp padding never wins).
    tokens.push_back(
        logits[0][length - 1].narrow(0, 0, config.model.vocab).argmax().item<int64_t>());
  }
  return tokens;
}

}  // namespace

int run_generate(const CliArgs& args, int* /*argc*/, char*** /*argv*/) {
  MpiRuntime mpi(nullptr,
                 nullptr);  // one process: MPI's self communicator for the model's tp group
  const Manifest manifest = open_checkpoint(args.inputs[0], args.inputs[0]);
  const FullModelState state = read_full_state(manifest);
  const std::string path = args.tokenizer.empty() ? state.config.data.tokenizer : args.tokenizer;
  TokenizerOptions options;
  options.tiktoken_pattern = args.pattern;
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(path, options);
  std::vector<int64_t> prompt;
  if (!args.prompt_ids.empty()) {
    for (const std::string& id : split(args.prompt_ids, ',')) prompt.push_back(std::stoll(id));
  } else {
    for (int32_t id : tokenizer->encode(args.prompt, true)) prompt.push_back(id);
  }
  if (prompt.empty()) throw ConfigError("--prompt: the prompt encodes to no tokens");
  for (int64_t id : prompt) {
    if (id < 0 || id >= state.config.model.vocab) {
      throw ConfigError(str("--prompt: token ", id, " is outside the model's vocabulary [0, ",
                            state.config.model.vocab, ")"));
    }
  }
  const std::vector<int64_t> tokens = greedy_continuation(state, prompt, args.tokens);
  if (args.print_ids) {
    std::printf("ids: %s\n", join(tokens, " ").c_str());
  }
  const std::string text = tokenizer->decode(std::vector<int32_t>(tokens.begin(), tokens.end()));
  std::printf("%s\n", printable(text).c_str());
  return 0;
}

}  // namespace triax
