// defines: triax::copy_to_tp_region, reduce_from_tp_region, gather_from_tp_region,
//          scatter_to_tp_region
//
// Megatron's f and g operators as autograd functions over the tensor-parallel communicator.
// A column-parallel layer starts with f (copy) and a row-parallel layer ends with g (reduce), so
// a Linear -> Linear pair costs one all-reduce forward and one backward. With tp = 1 each one
// returns its input unchanged (no communication, no autograd node).
#pragma once

#include <torch/torch.h>

#include "parallel/comm/communicator.h"

namespace triax {

/// f: forward identity, backward all-reduce (sum) of the gradient.
torch::Tensor copy_to_tp_region(const torch::Tensor& x, Communicator& tp);
/// g: forward all-reduce (sum), backward identity.
torch::Tensor reduce_from_tp_region(const torch::Tensor& x, Communicator& tp);
/// Forward all-gather along the last dim (rank order), backward keep this rank's slice.
torch::Tensor gather_from_tp_region(const torch::Tensor& x, Communicator& tp);
/// Forward keep this rank's slice of the last dim, backward all-gather along it.
torch::Tensor scatter_to_tp_region(const torch::Tensor& x, Communicator& tp);

/// This rank's slice of the last dim (size divisible by tp.size()); no autograd semantics.
torch::Tensor split_last_dim(const torch::Tensor& x, int rank, int size);
/// All ranks' `x` concatenated along the last dim; no autograd semantics.
torch::Tensor all_gather_last_dim(const torch::Tensor& x, Communicator& tp);

}  // namespace triax
