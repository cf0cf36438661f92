// defines: triax::AutocastScope
//
// train.precision: bf16 is LibTorch's CPU autocast (what torch.autocast("cpu", bfloat16) does):
// inside the scope, matmul-like ops (linear, mm, bmm, baddbmm, matmul) cast their inputs to
// bf16 and return bf16; everything else runs in its inputs' dtype. The parameters stay fp32
// (the master weights; autocast casts a weight once per scope and caches the copy), so gradients
// arrive in fp32 and the optimizer, DDP and checkpoints see fp32 as before. The models keep
// softmax and the loss in fp32 explicitly, and the residual stream stays fp32 because adding a
// bf16 branch to it promotes. Autocast is thread-local state: a scope is opened around each
// forward and loss, and activation recompute reopens it in backward (models/activation_checkpoint).
#pragma once

#include <ATen/autocast_mode.h>

namespace triax {

class AutocastScope {
 public:
  /// `bf16`: autocast on inside; false: off inside (as around an fp32 run's forward).
  explicit AutocastScope(bool bf16)
      : previous_(at::autocast::is_cpu_enabled()),
        previous_dtype_(at::autocast::get_autocast_cpu_dtype()),
        bf16_(bf16) {
    at::autocast::set_cpu_enabled(bf16);
    if (bf16) {
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      at::autocast::increment_nesting();
    }
  }
  ~AutocastScope() {
    // The weight casts are cached until the outermost scope ends (a step's forward).
    if (bf16_ && at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(previous_);
    at::autocast::set_autocast_cpu_dtype(previous_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

  /// Whether the calling thread is inside a bf16 scope now (what recompute captures).
  static bool active() {
    return at::autocast::is_cpu_enabled() &&
           at::autocast::get_autocast_cpu_dtype() == at::kBFloat16;
  }

 private:
  bool previous_;
  at::ScalarType previous_dtype_;
  bool bf16_;
};

}  // namespace triax
