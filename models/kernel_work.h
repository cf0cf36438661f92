// defines: triax::Kernel, triax::KernelShape, triax::StageKernels
//
// What a model's forward asks of a device, kernel by kernel, for a planner that has no machine to
// measure (plan/device_compute.h): each matmul's shape (its FLOPs and the bytes it must read and
// write) and each element-wise pass's bytes (norms, activations, softmax, dropout, residuals),
// which on a GPU run at memory bandwidth, not at the matmul peak. A family lists its own
// (ModelSpec::kernels); the planner turns them into seconds with a roofline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace triax {

struct Kernel {
  std::string name;  ///< "qkv", "scores", "softmax", "ln1": what --explain prints
  /// A matmul [m, k] x [k, n], `batch` of them (attention's per-head products); m = 0 for an
  /// element-wise pass.
  double m = 0, n = 0, k = 0;
  double batch = 1;
  /// Element-wise passes: the bytes the forward reads and writes.
  double bytes = 0;
  /// A matmul with a parameter: its backward computes a weight gradient (W of a split backward).
  bool weight = false;
  /// Attention's scores, softmax, dropout and weighted sum: what selective recompute replays.
  bool attention_core = false;

  bool matmul() const { return m > 0; }
  double flops() const { return 2 * m * n * k * batch; }
};

/// The shape a rank runs a part in.
struct KernelShape {
  int tp = 1;
  int64_t micro_batch = 1;
  bool sequence = false;     ///< sequence parallelism: element-wise passes outside the tp regions
                             ///< see 1/tp of the tokens
  double element_bytes = 4;  ///< activations' element: 4 (fp32) or 2 (bf16)
};

/// One micro-batch's forward, per rank: of one layer, and what the first stage (embedding) and
/// the last (final norm, head, loss) add.
struct StageKernels {
  std::vector<Kernel> layer, first, last;
};

}  // namespace triax
