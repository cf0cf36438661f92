// defines: triax::widen_bf16, triax::round_to_bf16, triax::round_to_bf16_values,
//          triax::round_to_bf16_words, triax::widen_bf16_words
//
// bf16 at the bit level: a bf16 word is the top 16 bits of an fp32, so widening is exact and
// rounding is integer arithmetic. Written so that the compiler vectorises loops over them
// (c10::BFloat16's conversions are equivalent but branch on NaN per element); the results are
// bit for bit those of LibTorch's .to(kBFloat16) and .to(kFloat).
#pragma once

#include <cstdint>
#include <cstring>

namespace triax {

/// The fp32 value of a bf16 word (exact).
inline float widen_bf16(uint16_t word) {
  const uint32_t bits = static_cast<uint32_t>(word) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// `value` rounded to the nearest bf16 (ties to even; a NaN becomes the quiet NaN 0x7fc0), as
/// c10::BFloat16 rounds.
inline uint16_t round_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  const uint32_t nan = 0x7fc0u;
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(value != value ? nan : rounded);
}

/// out[i] = widen_bf16(round_to_bf16(in[i])): fp32 values rounded to bf16 and held in fp32, in
/// one pass (in == out allowed). What x.to(kBFloat16).to(kFloat) computes in two.
void round_to_bf16_values(const float* in, float* out, int64_t count);

/// out[i] = round_to_bf16(in[i]): fp32 to bf16 words.
void round_to_bf16_words(const float* in, uint16_t* out, int64_t count);

/// out[i] = widen_bf16(in[i]): bf16 words to fp32.
void widen_bf16_words(const uint16_t* in, float* out, int64_t count);

}  // namespace triax
