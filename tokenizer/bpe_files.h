// defines: triax::read_gpt2_bpe, triax::read_tokenizer_json, triax::read_tiktoken,
//          triax::looks_like_tiktoken, triax::byte_alphabet
//
// The byte-level BPE files of the families triax trains, read into one BpeModel:
//   GPT-2 (openai/gpt-2): encoder.json (token -> id) + vocab.bpe ("#version" line, then one merge
//     "a b" per line); Hugging Face's vocab.json + merges.txt are the same content. Tokens are
//     written in GPT-2's printable byte alphabet (bytes_to_unicode: `!`..`~`, `¡`..`¬`, `®`..`ÿ`
//     stand for themselves, the other 68 bytes for U+0100 + n, so a space is `Ġ`).
//     <|endoftext|> (50256) is special: the eos (GPT-2 has no bos; documents are separated by it).
//   tokenizer.json (Hugging Face tokenizers): model.type BPE with a ByteLevel pre-tokenizer or
//     decoder; vocab, merges ("a b" strings or [a, b] pairs), ignore_merges, added_tokens, and
//     the Split regex when there is one (Llama 3, Qwen2), else GPT-2's. bos/eos from the
//     folder's tokenizer_config.json when present.
//   tiktoken (Llama 3's tokenizer.model): "base64(bytes) rank" per line; Llama 3's 256 special
//     tokens follow the 128000 ranks (<|begin_of_text|> = bos, <|end_of_text|> = eos).
// Each mistake names the file, the line or key, and what was expected.
#pragma once

#include <string>

#include "tokenizer/byte_bpe.h"

namespace triax {

BpeModel read_gpt2_bpe(const std::string& vocab_json, const std::string& merges_txt);
BpeModel read_tokenizer_json(const std::string& path, const std::string& tokenizer_config);
BpeModel read_tiktoken(const std::string& path, const std::string& pattern_family);
/// Whether `path` starts like a tiktoken rank file (not a SentencePiece protobuf).
bool looks_like_tiktoken(const std::string& path);
/// GPT-2's printable alphabet -> raw bytes; throws Error on a character outside it.
std::string byte_alphabet_to_bytes(const std::string& text, const std::string& where);

}  // namespace triax
