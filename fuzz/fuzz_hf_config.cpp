// Fuzz target: Hugging Face config.json (interop/hf_config.h), the model family's shape.
#include "fuzz/fuzz_input.h"
#include "interop/hf_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const triax::fuzz::InputFile input("config.json", data, size);
  try {
    const triax::HfModelConfig config = triax::read_hf_config(input.dir(), triax::ModelConfig{});
    (void)config.model.hidden;
  } catch (const std::exception& e) {
    triax::fuzz::require_named(e, input.dir());
  }
  return 0;
}
