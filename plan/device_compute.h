// defines: triax::KernelTime, triax::kernel_seconds, triax::device_profile
//
// A profile (plan/profile.h) for a device not at hand (plan/gpu_model.h), computed rather than
// measured:
//   compute  each kernel of the model's forward (ModelSpec::kernels) on a roofline: a matmul
//            takes max(FLOPs / (peak x matmul_efficiency), bytes / (bandwidth x
//            memory_efficiency)) — small or skinny matmuls (attention's per-head products,
//            a thin tp slice) fall to the memory side — and an element-wise pass its bytes at
//            the memory side; every kernel adds launch_seconds. Backward: a matmul is two of the
//            same size (input and weight gradients; W of a split backward is the weight ones),
//            an element-wise pass reads and writes twice its bytes. Full recompute replays the
//            layer's forward in backward, selective its attention core. The peak is the
//            precision's: bf16 (train.precision: bf16) or fp32 without TF32.
//   links    NCCL's ring: time = base + steps x hop latency + bytes x (ring share) / (link
//            bandwidth x link_efficiency), inside a node on NVLink, across on the network.
//   optimizer AdamW's pass over 32 bytes per parameter (fp32 master, moments, gradient) at the
//            memory side.
// The gradient sync overlaps backward (NCCL's stream); activations travel in the compute
// precision; a process reserves GpuModel::reserve() beside its tensors.
#pragma once

#include "core/config.h"
#include "models/kernel_work.h"
#include "plan/gpu_model.h"
#include "plan/profile.h"

namespace triax {

/// One kernel's seconds on `device` with `element_bytes` operands: forward, backward, and the
/// backward's weight-gradient part.
struct KernelTime {
  double forward = 0, backward = 0, weight = 0;
};
KernelTime kernel_seconds(const Kernel& kernel, const GpuModel& device, double peak_flops,
                          double element_bytes);

/// The profile of `config`'s model on `device` (nodes of device.gpus_per_node).
Profile device_profile(const Config& config, const GpuModel& device);

}  // namespace triax
