// defines: triax::ByteBpe, triax::BpeModel
//
// One byte-level BPE engine for GPT-2, Llama 3 and Qwen2 (their files differ, the algorithm does
// not): the pre-tokenizer cuts text into pieces; each piece starts as its bytes, one token each;
// the adjacent pair with the lowest merge rank is merged, leftmost first, until no pair has a
// rank (openai/gpt-2 encoder.py's `bpe`, Hugging Face's BPE, tiktoken's byte_pair_merge).
// Ranks are kept per pair of token ids (GPT-2's vocab.bpe and tokenizer.json list merges);
// tiktoken files rank tokens, so the pair (a, b) takes the rank of the token a+b. With
// `whole_pieces` (tiktoken, tokenizer.json's ignore_merges) a piece that is itself a token is
// emitted at once. Special tokens are split out before pre-tokenisation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"

namespace triax {

/// The learned part, as the loaders (tokenizer/bpe_files.h) read it: raw bytes throughout (the
/// files' printable byte alphabet already undone).
struct BpeModel {
  std::vector<std::string> tokens;  ///< id -> bytes ("" for ids no token has)
  /// (left, right) token bytes -> merge rank, for files that list merges.
  std::vector<std::pair<std::string, std::string>> merges;
  bool rank_by_token = false;  ///< tiktoken: rank of (a, b) = id of a+b
  bool whole_pieces = false;
  std::map<std::string, int32_t> specials;  ///< text -> id
  std::string pattern;                      ///< pre-tokenisation regex
  int32_t bos = -1, eos = -1;
  std::string source;  ///< for describe(): "tokenizer.json", ...
};

class ByteBpe : public Tokenizer {
 public:
  /// Throws Error when a byte has no token, a merge names an unknown token, or ids collide.
  explicit ByteBpe(BpeModel model);
  std::string describe() const override;
  std::vector<int32_t> encode(const std::string& text, bool allow_special = false) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(model_.tokens.size()); }
  int32_t bos_id() const override { return model_.bos; }
  int32_t eos_id() const override { return model_.eos; }

 private:
  void encode_ordinary(std::string_view text, std::vector<int32_t>& out) const;
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;

  BpeModel model_;
  Pretokenizer pretokenizer_;
  std::unordered_map<std::string, int32_t> ids_;  ///< bytes -> id (specials excluded)
  int32_t byte_ids_[256];
  /// (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  std::string special_starts_;  ///< first bytes of the special tokens
};

}  // namespace triax
