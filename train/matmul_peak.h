// defines: triax::measure_matmul_tflops
//
// The default MFU denominator on CPU: what one process achieves on a large fp32 matmul with its
// compute threads, measured in a fraction of a second. The trainer has one rank per node measure
// with all of the node's cores while the others wait, so the figure is the hardware's.
#pragma once

namespace triax {

/// Best of a few 1024^3 fp32 matmuls, in TFLOP/s.
double measure_matmul_tflops();

}  // namespace triax
