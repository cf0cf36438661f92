// Fuzz target: the safetensors readers (core/safetensors.h loads, core/safetensors_map.h maps) —
// checkpoint shards, Hugging Face weights. Every tensor either loads or is refused naming the file.
#include "core/safetensors.h"
#include "core/safetensors_map.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const triax::fuzz::InputFile input("model.safetensors", data, size);
  try {
    const triax::SafetensorsFile file = triax::load_safetensors(input.path());
    for (const auto& named : file.tensors) (void)named.second.sum();
  } catch (const std::exception& e) {
    triax::fuzz::require_named(e, input.path());
  }
  try {
    const triax::SafetensorsMap map(input.path());
    for (const std::string& name : map.names()) (void)map.info(name);
  } catch (const std::exception& e) {
    triax::fuzz::require_named(e, input.path());
  }
  return 0;
}
