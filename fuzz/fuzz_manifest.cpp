// Fuzz target: checkpoint manifests (checkpoint/manifest.h), YAML with the run's configuration.
#include "checkpoint/manifest.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const triax::fuzz::InputFile input("manifest.yaml", data, size);
  try {
    const triax::Manifest manifest = triax::Manifest::read(input.dir());
    (void)manifest.shards.size();
  } catch (const std::exception& e) {
    triax::fuzz::require_named(e, input.dir());
  }
  return 0;
}
