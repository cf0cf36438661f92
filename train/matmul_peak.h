// defines: triax::measure_matmul_tflops
//
// The default MFU denominator on CPU: what one process achieves on a large matmul with its
// compute threads, in the run's precision and by the path its matmuls take (core/bf16_matmul.h:
// native bf16 runs 2-3x faster than fp32 on a CPU with AVX512-BF16; emulated bf16 is an fp32
// matmul plus its roundings), so MFU is counted against the arithmetic actually used, in a
// fraction of a second. The trainer has one rank per node measure with all of the node's cores
// while the others wait, so the figure is the hardware's. On a GPU it is the GPU's bf16 (or fp32)
// product as cuBLAS runs it: below the datasheet (an H100's 989 dense bf16 TFLOP/s), which
// run.peak_tflops sets instead where MFU must be counted as the anchors count it.
#pragma once

#include "core/mixed_precision.h"

namespace triax {

/// Best of a few 1024^3 matmuls in `precision`'s matmul dtype (bf16: through mixed_mm), in
/// TFLOP/s; on a CUDA device 8192^3 ones of random operands, synchronised (run.device: cuda).
double measure_matmul_tflops(const MixedPrecision& precision,
                             const torch::Device& device = torch::kCPU);

}  // namespace triax
