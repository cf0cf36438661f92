// defines: triax::bf16_sum_op, triax::bf16_add_into
//
// MPI has no bfloat16: its 16-bit words travel as MPI_UINT16_T. To reduce them without widening
// the message to fp32 (ddp.reduce_dtype: bf16 exists to halve the bytes), a user-defined MPI_Op
// adds them as NCCL does: each pairwise sum in fp32, rounded back to bf16 (nearest even).
// Two addends round once, exactly as an fp32 sum rounded to bf16; more ranks round per step.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace triax {

/// inout[i] = bf16(float(in[i]) + float(inout[i])) for the raw bf16 words of `count` elements.
void bf16_add_into(const uint16_t* in, uint16_t* inout, int64_t count);

/// The commutative MPI_Op that applies bf16_add_into to MPI_UINT16_T buffers; created on first
/// use (after MPI_Init) and kept until MPI_Finalize frees it.
MPI_Op bf16_sum_op();

}  // namespace triax
