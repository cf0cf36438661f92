// defines: triax::gather_sequence, triax::reduce_scatter_sequence, triax::scatter_sequence
//
// Sequence parallelism (Korthikanti et al. 2022; Megatron's sequence_parallel): outside the
// tensor-parallel regions (LayerNorms, dropout, residual adds), each tp rank holds s/tp of the
// sequence, [b, s/tp, h], instead of the whole replicated [b, s, h]. Megatron's f and g become:
//  - before a column-parallel layer: all-gather along the sequence (backward: reduce-scatter,
//    summing the partial input gradients of the ranks' column slices);
//  - after a row-parallel layer: reduce-scatter along the sequence (backward: all-gather);
// the same bytes as the all-reduces they replace. Rank r holds rows [r*s/tp, (r+1)*s/tp) of dim 1.
#pragma once

#include <torch/torch.h>

#include "parallel/comm/communicator.h"

namespace triax {

/// [b, s/tp, h] -> [b, s, h]: forward all-gather along dim 1, backward reduce-scatter (sum).
torch::Tensor gather_sequence(const torch::Tensor& x, Communicator& tp);
/// [b, s, h] partial sums -> [b, s/tp, h] of their sum: forward reduce-scatter along dim 1,
/// backward all-gather.
torch::Tensor reduce_scatter_sequence(const torch::Tensor& x, Communicator& tp);
/// [b, s, h] replicated -> this rank's [b, s/tp, h]: forward keep the slice, backward all-gather.
torch::Tensor scatter_sequence(const torch::Tensor& x, Communicator& tp);
/// linear(gather_sequence(x), weight, bias) keeping only this rank's [b, s/tp, in] for backward
/// (which gathers it again): the gathered input is the largest activation a column-parallel
/// layer would otherwise keep, replicated on every tp rank (Megatron does the same).
torch::Tensor gathered_linear(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias, Communicator& tp);

}  // namespace triax
