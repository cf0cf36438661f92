// defines: triax::measure_matmul_tflops
//
// The default MFU denominator on CPU: what one process achieves on a large matmul with its
// compute threads, in the run's compute dtype (bf16 matmuls run 2-3x faster than fp32 on a CPU
// with AVX512-BF16, so a bf16 run is measured against the bf16 peak), in a fraction of a second.
// The trainer has one rank per node measure with all of the node's cores while the others wait, so
// the figure is the hardware's.
#pragma once

#include <c10/core/ScalarType.h>

namespace triax {

/// Best of a few 1024^3 matmuls in `dtype` (kFloat or kBFloat16), in TFLOP/s.
double measure_matmul_tflops(c10::ScalarType dtype = c10::kFloat);

}  // namespace triax
