// Fuzz target: token files (data/token_file.h), memory-mapped training data.
#include "data/token_file.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const triax::fuzz::InputFile input("train.tok", data, size);
  try {
    const triax::TokenFile tokens(input.path());
    if (tokens.size() > 0) {
      (void)tokens.read(0, std::min<int64_t>(tokens.size(), 16));
      (void)tokens.read(tokens.size() - 1, 1);
    }
  } catch (const std::exception& e) {
    triax::fuzz::require_named(e, input.path());
  }
  return 0;
}
