// defines: triax::broadcast_parameters, triax::average_gradients
//
// The simple form of data parallelism: replicas start equal (parameters broadcast from dp-rank
// 0) and stay equal (after backward every gradient is averaged over the DP group, so each rank
// applies the same update). All of a step's all-reduces are started before any is waited on.
// The MLP trainer uses it; the GPT uses DistributedDataParallel (buckets overlapped with
// backward), and the DDP benchmark compares the two.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "parallel/communicator.h"

namespace triax {

/// Overwrites every parameter (and buffer) with dp-rank `root`'s value.
void broadcast_parameters(torch::nn::Module& module, Communicator& dp, int root = 0);

/// Averages every parameter's gradient over `dp`. A parameter without a gradient gets a zero
/// one first, so every rank issues the same collectives (a mismatch would hang).
void average_gradients(const std::vector<torch::Tensor>& parameters, Communicator& dp);

}  // namespace triax
