// Fuzz target: tokenizer files (tokenizer/bpe_files.h): Hugging Face tokenizer.json, GPT-2's
// encoder.json + vocab.bpe, tiktoken rank files. The first byte picks the reader; for GPT-2 the
// rest is split at the first NUL into the two files.
#include <cstring>

#include "fuzz/fuzz_input.h"
#include "tokenizer/bpe_files.h"
#include "tokenizer/byte_bpe.h"

namespace {

// A model that was read must also work: encode and decode a text with every kind of piece.
void use(triax::BpeModel model) {
  const triax::ByteBpe bpe(std::move(model));
  const std::vector<int32_t> ids =
      bpe.encode("Hello, world! 123 \xc3\xa9t\xc3\xa9 <|endoftext|>", true);
  (void)bpe.decode(ids);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int kind = data[0] % 3;
  ++data;
  --size;
  try {
    if (kind == 0) {
      const triax::fuzz::InputFile input("tokenizer.json", data, size);
      try {
        use(triax::read_tokenizer_json(input.path(), ""));
      } catch (const std::exception& e) {
        triax::fuzz::require_named(e, input.path());
      }
    } else if (kind == 1) {
      const uint8_t* split = static_cast<const uint8_t*>(std::memchr(data, 0, size));
      const size_t first = split == nullptr ? size : static_cast<size_t>(split - data);
      const triax::fuzz::InputFile vocab("encoder.json", data, first);
      const size_t rest = first < size ? size - first - 1 : 0;
      const triax::fuzz::InputFile merges("vocab.bpe", data + size - rest, rest);
      try {
        use(triax::read_gpt2_bpe(vocab.path(), merges.path()));
      } catch (const std::exception& e) {
        const std::string what = e.what();
        if (what.find(vocab.path()) == std::string::npos) {
          triax::fuzz::require_named(e, merges.path());
        }
      }
    } else {
      const triax::fuzz::InputFile input("tokenizer.model", data, size);
      try {
        use(triax::read_tiktoken(input.path(), "llama3"));
      } catch (const std::exception& e) {
        triax::fuzz::require_named(e, input.path());
      }
    }
  } catch (...) {
    std::abort();
  }
  return 0;
}
