#include "core/bf16_bits.h"

namespace triax {

// Compiled for AVX-512 and AVX2 as well, chosen at load time (the build is portable, SSE2 only):
// the emulated bf16 path (core/bf16_matmul.h) runs these over every matmul input, output and
// gradient.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void
round_to_bf16_values(const float* in, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = widen_bf16(round_to_bf16(in[i]));
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void
round_to_bf16_words(const float* in, uint16_t* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = round_to_bf16(in[i]);
}

__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void widen_bf16_words(
    const uint16_t* in, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = widen_bf16(in[i]);
}

}  // namespace triax
