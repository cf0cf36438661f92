// defines: triax::set_compute_threads, triax::blas_description
//
// Why the BLAS gets its own call: Debian's LibTorch calls the system libblas.so.3, and which
// OpenBLAS build that is depends on what else the machine installed. The OpenMP build shares
// the thread count torch::set_num_threads sets; the pthreads build (libopenblas0-pthread, pulled
// in by libopenblas-dev) keeps a pool of its own, one thread per core, that ignores it. With
// 8 ranks on 2 cores that pool puts 16 BLAS threads on 2 cores: measured on the main job
// (8 ranks, 20 steps, 2 cores) the pthreads build ran fp32 at 0.73x and emulated bf16 at 0.52x
// of the OpenMP build. Setting OpenBLAS's own count too makes the build not matter.
#pragma once

#include <string>

namespace triax {

/// torch::set_num_threads(threads), and the same count for OpenBLAS's own pool where the
/// process's BLAS is OpenBLAS (found at run time: any build, or none).
void set_compute_threads(int threads);

/// The BLAS LibTorch's matmuls run on, for the start-up line: "OpenBLAS 0.3.21 ... (pthreads)",
/// "MKL", or "not OpenBLAS" (the reference BLAS is ~15x slower).
std::string blas_description();

}  // namespace triax
