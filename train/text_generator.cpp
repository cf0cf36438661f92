#include "train/text_generator.h"

#include "core/autocast_scope.h"
#include "core/mixed_precision.h"
#include "core/strings.h"
#include "schedules/pipeline_executor.h"

namespace triax {
namespace {

int64_t pick_token(const torch::Tensor& logits, const SampleConfig& sample,
                   torch::Generator& generator) {
  if (sample.top_k <= 1) return logits.argmax().item<int64_t>();
  const auto top =
      torch::topk(logits / sample.temperature, std::min<int64_t>(sample.top_k, logits.size(0)));
  const torch::Tensor probabilities = torch::softmax(std::get<0>(top), 0);
  const int64_t choice = torch::multinomial(probabilities, 1, false, generator).item<int64_t>();
  return std::get<1>(top)[choice].item<int64_t>();
}

}  // namespace

std::string generate_text(Trainer& trainer, ParallelContext& context, const Config& config,
                          const Tokenizer& tokenizer) {
  const SampleConfig& sample = config.sample;
  const int64_t seq = config.model.seq_len;
  std::vector<int64_t> tokens;
  for (int32_t id : tokenizer.encode(sample.prompt, true)) tokens.push_back(id);
  // An empty prompt starts from the beginning of a document (or a newline for bytes).
  const bool start_token = tokens.empty();
  if (start_token) {
    tokens.push_back(tokenizer.bos_id() >= 0   ? tokenizer.bos_id()
                     : tokenizer.eos_id() >= 0 ? tokenizer.eos_id()
                                               : int64_t{'\n'});
  }
  torch::NoGradGuard no_grad;
  std::vector<std::unique_ptr<ModelChunk>>& chunks = trainer.chunks();
  // Every rank of a context-parallel group holds the same weights: each generates from the whole
  // window by itself (the same tokens: the same stream). Training mode and context parallelism
  // come back when this returns or throws.
  const bool context_parallel = context.cp_size() > 1;
  for (auto& chunk : chunks) {
    chunk->module().eval();
    if (context_parallel) chunk->set_context_parallel(nullptr, config.parallel.context_mode);
  }
  struct Restore {
    std::vector<std::unique_ptr<ModelChunk>>& chunks;
    Communicator* cp;
    ContextMode mode;
    ~Restore() {
      for (auto& chunk : chunks) {
        chunk->module().train();
        if (cp != nullptr) chunk->set_context_parallel(cp, mode);
      }
    }
  } restore{chunks, context_parallel ? &context.cp() : nullptr, config.parallel.context_mode};
  PipelineExecutor executor(context.pp(), {1, seq, config.model.hidden});
  const Schedule schedule = forward_only(trainer.schedule().placement(), 1);
  // The same stream on every tp rank of the last stage, so they pick the same token.
  torch::Generator generator =
      at::detail::createCPUGenerator(static_cast<uint64_t>(config.train.seed) + 7919);
  for (int64_t n = 0; n < sample.tokens; ++n) {
    const int64_t length = std::min<int64_t>(static_cast<int64_t>(tokens.size()), seq);
    torch::Tensor window = torch::zeros({1, seq}, torch::kLong);
    window[0]
        .narrow(0, 0, length)
        .copy_(
            torch::tensor(std::vector<int64_t>(tokens.end() - length, tokens.end()), torch::kLong));
    int64_t next = 0;
    StageFunctions stage;
    const Batch prompt = Batch{window, torch::Tensor()}.to(trainer.device());
    const MixedPrecision precision(config);
    stage.forward = [&](int chunk, int, const torch::Tensor& input) {
      const auto scope = precision.compute_scope();
      return chunks[static_cast<size_t>(chunk)]->forward(input, prompt);
    };
    stage.loss = [&](int, const torch::Tensor& output) {
      const auto scope = precision.compute_scope();
      const torch::Tensor logits =
          chunks.back()->logits(output)[0][length - 1].to(torch::kFloat).cpu();  // picked here
      next = pick_token(logits, sample, generator);
      return torch::zeros({});
    };
    executor.run(schedule, stage);
    torch::Tensor chosen = torch::tensor({next}, torch::kLong);
    context.pp().broadcast(chosen, schedule.loss_rank());
    tokens.push_back(chosen.item<int64_t>());
  }
  const std::vector<int32_t> ids(tokens.begin() + (start_token ? 1 : 0), tokens.end());
  return tokenizer.decode(ids);
}

std::string printable(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    // A whole, valid UTF-8 sequence (2 to 4 bytes) is kept as it is.
    const size_t length = (c & 0xE0) == 0xC0   ? 2
                          : (c & 0xF0) == 0xE0 ? 3
                          : (c & 0xF8) == 0xF0 ? 4
                                               : 0;
    bool valid = length > 0 && c >= 0xC2 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (valid) {
      out += text.substr(i, length);
      i += length - 1;
    } else if ((c >= 32 && c < 127) || c == '\n' || c == '\t') {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    }
  }
  return out;
}

}  // namespace triax
