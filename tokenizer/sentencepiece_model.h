// defines: triax::SentencePieceModel, triax::train_sentencepiece, triax::SentencePieceTraining
//
// SentencePiece models (Llama 2, Mistral: a protobuf tokenizer.model) through Debian's
// libsentencepiece (opened apart from LibTorch: tokenizer/sentencepiece_shim.cpp says why), and
// training one on a user's corpus with its trainer, a well-kept library
// (`triax tokenizer train` runs Debian's spm_train). The defaults are Llama 2's recipe
// (karpathy/llama2.c's doc/train_llama_tokenizer.md): BPE, byte_fallback (no unknown tokens: any
// byte is a token), split_digits, identity normalisation keeping every space (so decode(encode(x))
// = x), a dummy prefix space, unk 0 / bos 1 / eos 2.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace triax {

class SentencePieceModel : public Tokenizer {
 public:
  /// Throws ConfigError naming the file when SentencePiece cannot load it.
  explicit SentencePieceModel(const std::string& path);
  ~SentencePieceModel() override;
  SentencePieceModel(const SentencePieceModel&) = delete;
  SentencePieceModel& operator=(const SentencePieceModel&) = delete;
  std::string describe() const override;
  /// SentencePiece has no special-token syntax in text: `allow_special` changes nothing.
  std::vector<int32_t> encode(const std::string& text, bool allow_special = false) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int64_t vocab_size() const override;
  int32_t bos_id() const override;
  int32_t eos_id() const override;

 private:
  std::string path_;
  void* handle_ = nullptr;  ///< the processor inside libtriax_sentencepiece (see the .cpp)
};

struct SentencePieceTraining {
  std::vector<std::string> inputs;  ///< text files
  std::string out_prefix;           ///< writes PREFIX.model and PREFIX.vocab
  int vocab_size = 8000;
  std::string model_type = "bpe";   ///< bpe | unigram
  int64_t max_sentences = 2000000;  ///< input_sentence_size: lines sampled for training
};

/// Trains and returns the .model path. Throws ConfigError with SentencePiece's message.
std::string train_sentencepiece(const SentencePieceTraining& training);

}  // namespace triax
