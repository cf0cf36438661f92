#include "parallel/comm/mpi_bf16_sum.h"

#include "core/bf16_bits.h"
#include "parallel/comm/mpi_check.h"

namespace triax {
namespace {

void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  bf16_add_into(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), *len);
}

}  // namespace

// Compiled for AVX-512 and AVX2 as well, chosen at load time (the build is portable, SSE2 only):
// the wide forms run the loop ~5x faster, which decides whether a bf16 wire pays at all.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void bf16_add_into(
    const uint16_t* in, uint16_t* inout, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    inout[i] = round_to_bf16(widen_bf16(in[i]) + widen_bf16(inout[i]));
}

MPI_Op bf16_sum_op() {
  static const MPI_Op op = [] {
    MPI_Op created = MPI_OP_NULL;
    TRIAX_MPI_CHECK(MPI_Op_create(&bf16_sum, /*commute=*/1, &created));
    return created;
  }();
  return op;
}

}  // namespace triax
