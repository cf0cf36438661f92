// set_compute_threads sets OpenBLAS's own thread count along with LibTorch's: a pthreads build of
// OpenBLAS (what libopenblas-dev installs as libblas.so.3) otherwise keeps one thread per core in
// every rank, whatever torch::set_num_threads says (core/compute_threads.h).
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <torch/torch.h>

#include "core/compute_threads.h"

TEST_CASE("set_compute_threads sets LibTorch's and OpenBLAS's thread counts", "[threads]") {
  const auto get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  const int before = torch::get_num_threads();
  triax::set_compute_threads(2);
  CHECK(torch::get_num_threads() == 2);
  if (get != nullptr) {
    CHECK(get() == 2);
    CHECK(triax::blas_description().rfind("OpenBLAS", 0) == 0);
  } else {
    const std::string blas = triax::blas_description();
    CHECK((blas == "MKL" || blas.rfind("not OpenBLAS", 0) == 0));
  }
  triax::set_compute_threads(before);
  CHECK(torch::get_num_threads() == before);
  if (get != nullptr) CHECK(get() == before);
}
