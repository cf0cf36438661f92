// defines: triax::Bf16Path, triax::Bf16Choice, triax::set_bf16_matmul, triax::bf16_choice,
//          triax::Bf16WeightCopies, triax::mixed_linear, triax::mixed_mm, triax::mixed_matmul,
//          triax::mixed_bmm, triax::mixed_baddbmm, triax::convert_precision,
//          triax::mixed_add
//
// Note [bf16 matmul arithmetic]
// train.precision: bf16 promises one arithmetic on every CPU: a matmul's inputs rounded to bf16,
// their products summed in fp32, the result rounded to bf16 once. That is what autocast computes
// where oneDNN runs the product (AVX512-BF16 or AMX dot products accumulate in fp32). Where it
// does not (a CPU without AVX-512), LibTorch 1.13 falls back to a generic kernel that sums in
// bf16: a 64x1024 by 1024x64 product of bf16 inputs is 7.4% off the fp32-summed product of the
// same inputs, and the kernel runs at ~3 GFLOP/s against OpenBLAS's ~80 in fp32.
//
// Two paths compute that one arithmetic (Bf16Path):
//   native    autocast's own bf16 kernels (oneDNN): chosen where the CPU has bf16 dot products
//             and a probe product shows fp32 summation;
//   emulated  the inputs rounded to their bf16 values, held in fp32 (one pass, core/bf16_bits.h;
//             the same bits as x.to(bf16).to(fp32)), one fp32 matmul (OpenBLAS), the output
//             rounded to bf16. Each rounding is differentiated into the same rounding of the
//             gradient, so backward is the same arithmetic too:
//             grad_x = bf16(fp32 mm(bf16 grad_y, bf16 w)), as native backward computes it.
// The two differ only in the order of fp32 sums (a result may land one bf16 ulp apart where the
// fp32 sum lies near a rounding boundary). The emulated path costs an fp32 matmul and a few
// element-wise passes: bf16 then brings no speed, only its rounding and half-size activations.
// To keep those passes few, a step rounds each parameter once (Bf16WeightCopies) and all its
// micro-batches share the copy, forward and backward, as autocast shares its weight casts
// within one forward: a step's weights are rounded once, not once per micro-batch and use.
//
// Every matmul-like op of the models goes through the mixed_* functions below: inside a bf16
// AutocastScope, or given bf16 tensors (a hand-written backward), they compute the arithmetic
// above on the chosen path; otherwise they are the plain torch ops (fp32 runs, CUDA tensors).
#pragma once

#include <torch/types.h>

#include <string>

#include "core/config_choices.h"

namespace triax {

enum class Bf16Path { kNative, kEmulated };

/// The path bf16 matmuls take in this process, and why (printed at start-up).
struct Bf16Choice {
  Bf16Path path = Bf16Path::kEmulated;
  bool cpu_bf16 = false;      ///< the CPU has bf16 dot products (AVX512-BF16 or AMX-BF16)
  bool native_exact = false;  ///< LibTorch's bf16 matmul sums in fp32 here (the probe)
  std::string why;            ///< one line: the path, the CPU's capability, the probe
};

/// Decides the path for train.bf16_matmul (auto: native where the CPU has bf16 dot products and
/// the probe passes, else emulated) and makes it the process's. `native` where LibTorch's bf16
/// kernel sums in bf16 throws ConfigError naming the key. TRIAX_NO_AVX512=1 makes this process
/// decide as on a CPU without AVX-512 (no bf16 dot products; the probe meets LibTorch's generic
/// bf16 kernel, oneDNN's bf16 matmul being AVX-512 only; oneDNN's fp32 kernels stay, as such a
/// CPU has them): how tests and benchmarks check the emulated path on any machine.
const Bf16Choice& set_bf16_matmul(Bf16Matmul requested);

/// The process's choice; `auto` decided on first use when set_bf16_matmul was never called.
const Bf16Choice& bf16_choice();

/// While one is open on this thread (the trainer opens one around a step's micro-batches), the
/// emulated path rounds each parameter (a leaf tensor that requires grad) once per version and
/// every forward and backward in the scope shares the copy: one fp32 copy of the matmul weights
/// lives for the step, where each micro-batch in flight held its own before. Closed: released.
/// A no-op on the native path (autocast caches its own casts).
class Bf16WeightCopies {
 public:
  Bf16WeightCopies();
  ~Bf16WeightCopies();
  Bf16WeightCopies(const Bf16WeightCopies&) = delete;
  Bf16WeightCopies& operator=(const Bf16WeightCopies&) = delete;
};

/// torch::linear, torch::mm, torch::matmul, torch::bmm and torch::baddbmm under the run's
/// precision (Note [bf16 matmul arithmetic]). On the emulated path mixed_linear of a bf16 weight
/// (train.param_dtype: bf16) saves the weight itself for backward and widens it there again, where
/// a rounded fp32 copy would live through the micro-batch.
torch::Tensor mixed_linear(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias = {});
torch::Tensor mixed_mm(const torch::Tensor& a, const torch::Tensor& b);
torch::Tensor mixed_matmul(const torch::Tensor& a, const torch::Tensor& b);
torch::Tensor mixed_bmm(const torch::Tensor& a, const torch::Tensor& b);
/// beta * bias + alpha * (a @ b); under bf16 the bias is rounded like an input (as autocast does).
torch::Tensor mixed_baddbmm(const torch::Tensor& bias, const torch::Tensor& a,
                            const torch::Tensor& b, double beta, double alpha);

/// t.to(dtype), differentiated as .to(); between fp32 and bf16 on the CPU in one vectorised pass
/// in t's own layout (core/bf16_bits.h), the same bits: LibTorch 1.13 rounds fp32 to bf16 ~5x
/// slower (~250 us for 256k elements on one core), and a bf16 run converts at every element-wise
/// op it computes in fp32 (GELU, softmax, the residual adds, the loss) and in their backward.
torch::Tensor convert_precision(const torch::Tensor& t, torch::ScalarType dtype);

/// The rows of `table` at `ids` (torch::embedding), in fp32: a bf16 table's (train.param_dtype:
/// bf16) rows widened, exactly, and its gradient summed over the rows in fp32 and rounded to bf16
/// once (autograd would add a bf16 table's rows in bf16: hundreds of addends for a frequent token).
/// Saves only the ids, not the table (which ZeRO-3 frees between uses).
torch::Tensor mixed_embedding(const torch::Tensor& table, const torch::Tensor& ids);

/// a + b of tensors whose dtypes may differ (a bf16 layer output added to the fp32 residual
/// stream): both converted to the promoted dtype by convert_precision, then added. The same bits
/// as LibTorch's promoting add; its backward rounds the bf16 side's gradient in one pass.
torch::Tensor mixed_add(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace triax
