// defines: triax::measure_matmul_tflops
//
// The default MFU denominator on CPU: what one process achieves on a large matmul with its
// compute threads, in the run's precision and by the path its matmuls take (core/bf16_matmul.h:
// native bf16 runs 2-3x faster than fp32 on a CPU with AVX512-BF16; emulated bf16 is an fp32
// matmul plus its roundings), so MFU is counted against the arithmetic actually used, in a
// fraction of a second. The trainer has one rank per node measure with all of the node's cores
// while the others wait, so the figure is the hardware's.
#pragma once

#include "core/mixed_precision.h"

namespace triax {

/// Best of a few 1024^3 matmuls in `precision`'s matmul dtype (bf16: through mixed_mm), in
/// TFLOP/s.
double measure_matmul_tflops(const MixedPrecision& precision);

}  // namespace triax
