// defines: triax::save_comm, triax::saved_comm
//
// The tensor-parallel autograd functions (tp_mappings.cpp, sequence_parallel.cpp) keep their
// communicator in the autograd context. Contexts hold IValues; the communicator outlives every
// graph built over it, so its address is kept as an integer.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "parallel/comm/communicator.h"

namespace triax {

inline void save_comm(torch::autograd::AutogradContext* ctx, Communicator& comm) {
  ctx->saved_data["comm"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(&comm));
}

inline Communicator& saved_comm(torch::autograd::AutogradContext* ctx) {
  return *reinterpret_cast<Communicator*>(static_cast<intptr_t>(ctx->saved_data["comm"].toInt()));
}

}  // namespace triax
