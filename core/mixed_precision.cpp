#include "core/mixed_precision.h"

#include "core/bf16_matmul.h"

namespace triax {

void MixedPrecision::select_matmul_path() const {
  if (bf16_compute_) set_bf16_matmul(matmul_);
}

std::string MixedPrecision::describe(bool gpu) const {
  if (!bf16_compute_) return "fp32";
  if (gpu) return "bf16 (CUDA autocast)";
  return bf16_choice().path == Bf16Path::kNative ? "bf16 (native)" : "bf16 (emulated)";
}

}  // namespace triax
