// defines: triax::PreparedData, triax::prepare_text_data
//
// `triax prepare-data [--tokenizer PATH]`: text files (or folders of them, walked in sorted
// order) -> token files OUT/train.tok and OUT/val.tok (format: data/token_file.h): bytes
// (vocabulary 256) by default, or the ids of a tokenizer (tokenizer/tokenizer.h), each file a
// document written as [bos] text [eos] with whichever of the two the tokenizer has (GPT-2:
// <|endoftext|> after each; Llama: <|begin_of_text|> before, <|end_of_text|> after).
// Binary files (any NUL byte) and symbolic links inside folders are skipped and listed, so a
// folder like /usr/share/games/fortunes, which holds index files and .u8 links beside the text,
// can be given as it is.
// The held-out split is spread over the whole corpus rather than taken from its end (which
// would be one topic): the text is cut into blocks of about 4 KiB at line ends, and block k goes
// to validation when floor((k+1) f) > floor(k f), i.e. every 1/f-th block for fraction f.
// Blocks are tokenised on `threads` threads at once (each block alone: cut at a line end, a
// block boundary never falls inside a word).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace triax {

class Tokenizer;

struct PreparedData {
  int64_t files = 0;                 ///< text files read (= documents)
  int64_t bytes = 0;                 ///< bytes of text read
  int64_t vocab = 256;               ///< the token files' vocabulary
  double seconds = 0;                ///< spent tokenising
  std::vector<std::string> skipped;  ///< "path (why)" for each file left out
  int64_t train_tokens = 0;
  int64_t val_tokens = 0;
};

/// Throws Error naming the path when an input is missing or nothing readable remains.
PreparedData prepare_text_data(const std::vector<std::string>& inputs, const std::string& out_dir,
                               double val_fraction, const Tokenizer& tokenizer, int threads = 1);

}  // namespace triax
