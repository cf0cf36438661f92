#include <filesystem>

#include "core/error.h"
#include "core/strings.h"
#include "tokenizer/bpe_files.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/tokenizer.h"

namespace triax {
namespace {

namespace fs = std::filesystem;

// Vocabulary 256: each byte is its token (prepare-data without a tokenizer).
class ByteTokenizer : public Tokenizer {
 public:
  std::string describe() const override { return "bytes (256 tokens)"; }
  std::vector<int32_t> encode(const std::string& text, bool) const override {
    return std::vector<int32_t>(reinterpret_cast<const unsigned char*>(text.data()),
                                reinterpret_cast<const unsigned char*>(text.data()) + text.size());
  }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string text;
    for (int32_t id : ids) text += static_cast<char>(id & 0xFF);
    return text;
  }
  int64_t vocab_size() const override { return 256; }
  int32_t bos_id() const override { return -1; }
  int32_t eos_id() const override { return -1; }
};

std::unique_ptr<Tokenizer> from_file(const fs::path& file, const TokenizerOptions& options) {
  const std::string name = file.filename().string();
  const fs::path dir = file.parent_path();
  if (file.extension() == ".json" && name != "vocab.json" && name != "encoder.json") {
    const fs::path config = dir / "tokenizer_config.json";
    return std::make_unique<ByteBpe>(
        read_tokenizer_json(file.string(), fs::exists(config) ? config.string() : ""));
  }
  if (name == "vocab.json" || name == "encoder.json") {
    const fs::path merges = dir / (name == "vocab.json" ? "merges.txt" : "vocab.bpe");
    return std::make_unique<ByteBpe>(read_gpt2_bpe(file.string(), merges.string()));
  }
  if (looks_like_tiktoken(file.string())) {
    return std::make_unique<ByteBpe>(read_tiktoken(file.string(), options.tiktoken_pattern));
  }
  return std::make_unique<SentencePieceModel>(file.string());
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path,
                                          const TokenizerOptions& options) {
  if (path == "bytes") return std::make_unique<ByteTokenizer>();
  const fs::path p(path);
  if (fs::is_regular_file(p)) return from_file(p, options);
  if (fs::is_directory(p)) {
    for (const char* name : {"tokenizer.json", "vocab.json", "encoder.json", "tokenizer.model"}) {
      if (fs::exists(p / name)) return from_file(p / name, options);
    }
  }
  throw ConfigError(str("tokenizer ", path, ": not found (valid: bytes, a tokenizer.json, ",
                        "vocab.json + merges.txt, encoder.json + vocab.bpe, a tokenizer.model ",
                        "(SentencePiece or tiktoken), or a folder holding one)"));
}

}  // namespace triax
