// defines: triax::compute_device, triax::check_compute_device
//
// run.device: where a rank's model, batches, gradients and optimizer state live. `cuda` is the
// GPU of the rank's local rank (local_rank % visible GPUs, as torchrun and Slurm's GPU binding
// number them); everything the loop reduces as a number (loss, gradient norm, evaluation sums)
// stays on the host, where the run's communicators (MPI or Gloo) work. One rank per job for now:
// the data, tensor and pipeline collectives on device tensors need the NCCL communicator in the
// trainer (docs/gpu.md), so plan_run refuses cuda with more than one rank.
#pragma once

#include <torch/types.h>

#include "core/config.h"

namespace triax {

/// The device `device` names for the process of local rank `local_rank`. Throws ConfigError
/// naming run.device where cuda is asked for and no CUDA device is visible (a CPU-only
/// LibTorch, or no GPU).
torch::Device compute_device(Device device, int local_rank);

/// The rules run.device: cuda adds to a configuration for `world_size` ranks (ConfigError naming
/// the key, the value, the rule and what is valid); nothing for cpu. Does not look for a GPU.
void check_compute_device(const Config& config, int world_size);

}  // namespace triax
