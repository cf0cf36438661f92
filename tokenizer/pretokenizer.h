// defines: triax::Pretokenizer, triax::pretokenizer_pattern
//
// Byte-level BPE first cuts text into pieces with a regular expression (the family's
// "pre-tokenisation"), then merges bytes only inside a piece. The patterns need Unicode classes
// (\p{L}, \p{N}), Unicode \s, an inline case-insensitive group and negative look-ahead, which
// std::regex lacks: PCRE2 (Debian's libpcre2), compiled once with its JIT.
// Text that is not valid UTF-8 is still tokenised whole: PCRE2 matches the valid stretches
// (PCRE2_MATCH_INVALID_UTF) and every byte between matches becomes a piece of its own run, so
// decode(encode(bytes)) = bytes for any input.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace triax {

/// The published patterns by family name: "gpt2" (openai/gpt-2 encoder.py), "llama3"
/// (meta-llama/llama3 tokenizer.py; cl100k's), "qwen2" (llama3's with single digits). Throws
/// Error naming the valid ones.
std::string pretokenizer_pattern(const std::string& family);

class Pretokenizer {
 public:
  /// Throws Error with PCRE2's message and offset when `pattern` does not compile.
  explicit Pretokenizer(const std::string& pattern);
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  const std::string& pattern() const { return pattern_; }
  /// The pieces of `text`, in order; together they are exactly `text`. Thread-safe.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Impl;
  std::string pattern_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace triax
