#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include "core/error.h"
#include "core/strings.h"

namespace triax {

std::string pretokenizer_pattern(const std::string& family) {
  if (family == "gpt2") {
    return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  }
  const std::string letters_digits = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|)";
  const std::string rest = R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (family == "llama3") return letters_digits + R"(\p{N}{1,3})" + rest;
  if (family == "qwen2") return letters_digits + R"(\p{N})" + rest;
  throw Error(str("pre-tokenizer '", family, "' (valid: gpt2, llama3, qwen2)"));
}

struct Pretokenizer::Impl {
  pcre2_code* code = nullptr;
  ~Impl() { pcre2_code_free(code); }
};

Pretokenizer::Pretokenizer(const std::string& pattern)
    : pattern_(pattern), impl_(std::make_unique<Impl>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (impl_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw Error(str("pre-tokenizer pattern does not compile at offset ", offset, ": ",
                    reinterpret_cast<const char*>(message), " (pattern: ", pattern, ")"));
  }
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // interpreted when JIT is unavailable
}

Pretokenizer::~Pretokenizer() = default;

std::vector<std::string_view> Pretokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t at = 0;
  while (at < text.size()) {
    const int rc = pcre2_match(impl_->code, subject, text.size(), at, 0, match, nullptr);
    if (rc < 0) {  // no match in the rest (only invalid UTF-8 is left)
      pieces.push_back(text.substr(at));
      break;
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const size_t begin = ovector[0], end = ovector[1];
    if (begin > at) pieces.push_back(text.substr(at, begin - at));  // bytes no pattern covers
    if (end == begin) {  // an empty match: step one byte on (the patterns never match empty)
      pieces.push_back(text.substr(begin, 1));
      at = begin + 1;
      continue;
    }
    pieces.push_back(text.substr(begin, end - begin));
    at = end;
  }
  pcre2_match_data_free(match);
  return pieces;
}

}  // namespace triax
