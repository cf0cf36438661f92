// defines: triax::current_torch_stream
//
// The one place that differs between LibTorch builds: Debian's 1.13 is CPU-only (its c10/cuda
// headers exist but no library behind them), a CUDA LibTorch 2.x has torch's current CUDA
// stream. generated/parallel/build_config.h (CMake) says which one this build links.
#pragma once

#include <cuda_runtime.h>

#include "parallel/build_config.h"

#if TRIAX_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace triax {

/// The stream torch queues work for `device` on: its current stream with a CUDA LibTorch; the
/// legacy default stream otherwise (what an unmodified torch program uses).
inline cudaStream_t current_torch_stream(int device) {
#if TRIAX_TORCH_CUDA
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
#else
  (void)device;
  return cudaStreamLegacy;
#endif
}

}  // namespace triax
