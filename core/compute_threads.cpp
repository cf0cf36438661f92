#include "core/compute_threads.h"

#include <ATen/Context.h>
#include <dlfcn.h>
#include <torch/torch.h>

#include "core/strings.h"

namespace triax {
namespace {

// OpenBLAS's C API, looked up in the process rather than linked: triax links LibTorch, not a BLAS,
// and the system's libblas.so.3 may be any OpenBLAS build or another BLAS.
template <typename Fn>
Fn openblas(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

void set_compute_threads(int threads) {
  torch::set_num_threads(threads);
  if (auto set = openblas<void (*)(int)>("openblas_set_num_threads")) set(threads);
}

std::string blas_description() {
  const auto config = openblas<char* (*)()>("openblas_get_config");
  const auto parallel = openblas<int (*)()>("openblas_get_parallel");
  if (config == nullptr) {
    // PyTorch's own LibTorch builds link MKL; Debian's calls libblas.so.3, which without OpenBLAS
    // is the reference BLAS.
    return at::hasMKL() ? "MKL" : "not OpenBLAS (the reference BLAS is ~15x slower)";
  }
  const int mode = parallel != nullptr ? parallel() : -1;
  const char* kind = mode == 0 ? "sequential" : mode == 1 ? "pthreads" : mode == 2 ? "OpenMP" : "?";
  return str(config(), " (", kind, ")");
}

}  // namespace triax
