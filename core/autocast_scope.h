// defines: triax::AutocastScope
//
// train.precision: bf16 is LibTorch's autocast (what torch.autocast(device, bfloat16) does), on
// the CPU and on CUDA alike (each applies to its own device's tensors, so a scope turns on both):
// inside the scope, matmul-like ops (linear, mm, bmm, baddbmm, matmul) cast their inputs to
// bf16 and return bf16; everything else runs in its inputs' dtype. The parameters stay fp32
// (the master weights; autocast casts a weight once per scope and caches the copy), so gradients
// arrive in fp32 and the optimizer, DDP and checkpoints see fp32 as before. The models keep
// softmax and the loss in fp32 explicitly, and the residual stream stays fp32 because adding a
// bf16 branch to it promotes. Autocast is thread-local state: a scope is opened around each
// forward and loss, and activation recompute reopens it in backward (models/activation_checkpoint).
#pragma once

#include "core/torch_compat.h"

namespace triax {

class AutocastScope {
 public:
  /// `bf16`: autocast on inside; false: off inside (as around an fp32 run's forward).
  explicit AutocastScope(bool bf16)
      : previous_{autocast_enabled(at::kCPU), autocast_enabled(at::kCUDA)},
        previous_dtype_{autocast_dtype(at::kCPU), autocast_dtype(at::kCUDA)},
        bf16_(bf16) {
    for (const at::DeviceType device : {at::kCPU, at::kCUDA}) {
      set_autocast_enabled(device, bf16);
      if (bf16) set_autocast_dtype(device, at::kBFloat16);
    }
    if (bf16) at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    // The weight casts are cached until the outermost scope ends (a step's forward).
    if (bf16_ && at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    const at::DeviceType devices[] = {at::kCPU, at::kCUDA};
    for (int i = 0; i < 2; ++i) {
      set_autocast_enabled(devices[i], previous_[i]);
      set_autocast_dtype(devices[i], previous_dtype_[i]);
    }
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

  /// Whether the calling thread is inside a bf16 scope now (what recompute captures).
  static bool active() {
    return autocast_enabled(at::kCPU) && autocast_dtype(at::kCPU) == at::kBFloat16;
  }

 private:
  bool previous_[2];
  at::ScalarType previous_dtype_[2];
  bool bf16_;
};

}  // namespace triax
