#include "train/compute_device.h"

#include <torch/cuda.h>

#include "core/error.h"
#include "core/strings.h"
#include "models/model_spec.h"

namespace triax {

torch::Device compute_device(Device device, int local_rank) {
  if (device == Device::kCpu) return torch::Device(torch::kCPU);
  const auto count = static_cast<int>(torch::cuda::device_count());
  if (count == 0) {
    throw ConfigError(
        "run.device: cuda needs a CUDA device, but this process sees none (torch::cuda::"
        "device_count() is 0: no GPU, CUDA_VISIBLE_DEVICES empty, or a triax built against a "
        "CPU-only LibTorch; docs/gpu.md builds one against CUDA's). Valid here: run.device: cpu");
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % count));
}

void check_compute_device(const Config& config, int world_size) {
  if (config.run.device != Device::kCuda) return;
  const auto refuse = [](const std::string& what) {
    throw ConfigError(str("run.device: cuda ", what));
  };
  if (world_size > 1) {
    refuse(str("trains on one rank in this version, but the job has ", world_size,
               " ranks: collectives on GPU tensors need the NCCL communicator in the trainer, "
               "which is not there yet (docs/gpu.md). Launch one rank, or set run.device: cpu"));
  }
  if (!model_spec(config.model.arch).pipelined) {
    refuse(str("is supported for model.arch: gpt, llama, not '", config.model.arch,
               "' (set run.device: cpu)"));
  }
  if (shard_level(config) != ShardLevel::kNone) {
    refuse(str("runs one rank, where there is nothing to shard over, but ddp.shard is ",
               shard_level(config), " (set ddp.shard: none and optimizer.shard: false)"));
  }
  if (config.train.numerics == Numerics::kLayoutInvariant) {
    refuse(
        "computes with the GPU's kernels, whose sums are not the CPU's, but train.numerics: "
        "layout_invariant promises the CPU path's bits across layouts (set train.numerics: fast)");
  }
}

}  // namespace triax
