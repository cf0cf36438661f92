// defines: triax::Tokenizer, triax::TokenizerOptions, triax::load_tokenizer
//
// Text <-> token ids for the model families triax trains (docs/tokenizers.md):
//   byte-level BPE (tokenizer/byte_bpe.h): GPT-2's encoder.json + vocab.bpe or vocab.json +
//     merges.txt, the BPE model inside a Hugging Face tokenizer.json (GPT-2, Llama 3, Qwen2), and
//     tiktoken rank files (Llama 3's tokenizer.model);
//   SentencePiece models (Llama 2, Mistral; tokenizer/sentencepiece_model.h);
//   bytes (vocabulary 256, no file: what prepare-data wrote before tokenizers).
// `load_tokenizer` takes a file or a folder (a Hugging Face model folder finds its tokenizer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace triax {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// What it is, for messages: "byte-level BPE (tokenizer.json, 50257 tokens)".
  virtual std::string describe() const = 0;
  /// Ids of `text`. Special tokens written in the text ("<|endoftext|>") become their ids when
  /// `allow_special`, else they are ordinary text.
  virtual std::vector<int32_t> encode(const std::string& text,
                                      bool allow_special = false) const = 0;
  /// The text of `ids` (bytes: a cut may end inside a UTF-8 character).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
  /// One past the largest id.
  virtual int64_t vocab_size() const = 0;
  /// Begin / end of document ids, -1 when the tokenizer has none. Each document prepare-data
  /// writes is [bos] text [eos], with whichever exist (GPT-2: only <|endoftext|> as eos).
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;
};

struct TokenizerOptions {
  /// The pre-tokenisation pattern of a tiktoken file, which does not store it: "llama3" (the
  /// default: Llama 3's tokenizer.model), "qwen2" or "gpt2" (tokenizer/pretokenizer.h).
  std::string tiktoken_pattern = "llama3";
};

/// "bytes", a tokenizer file, or a folder holding one (tokenizer.json; vocab.json + merges.txt;
/// encoder.json + vocab.bpe; tokenizer.model, SentencePiece or tiktoken). Throws ConfigError
/// naming the path and what would be valid.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path,
                                          const TokenizerOptions& options = {});

}  // namespace triax
