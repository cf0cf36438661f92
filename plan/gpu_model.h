// defines: triax::GpuModel, triax::gpu_presets, triax::find_gpu
//
// A GPU and its node, from datasheets, for planning a cluster that is not at hand
// (`triax plan --device h100`): dense matmul peaks, memory and its bandwidth, the link between
// GPUs of a node (NVLink/NVSwitch, per GPU and direction) and to other nodes (InfiniBand/RoCE,
// per GPU), NCCL's latencies, and what a process holds beside its tensors. The presets' figures
// and sources are in docs/plan.md ("Devices"); any other machine is a YAML file of the same
// fields (GpuModel::read). Four constants say how much of a peak real kernels reach (the
// roofline's efficiencies, plan/device_compute.h): fitted once on Megatron-LM's published runs
// (docs/plan.md, "Checked against published runs") and the same for every device unless a file
// sets its own.
#pragma once

#include <string>
#include <vector>

namespace triax {

struct GpuModel {
  std::string name;             ///< "h100", or the file's name:
  std::string source;           ///< where the figures come from
  double bf16_flops = 0;        ///< dense bf16/fp16 tensor-core peak, FLOP/s per GPU
  double fp32_flops = 0;        ///< fp32 (no TF32) peak, FLOP/s per GPU
  double memory_bytes = 0;      ///< device memory
  double memory_bandwidth = 0;  ///< bytes/s
  double node_bandwidth = 0;    ///< to the other GPUs of its node, bytes/s per direction
  double net_bandwidth = 0;     ///< to other nodes, bytes/s per GPU and direction
  int gpus_per_node = 8;
  /// NCCL's ring (Simple protocol) latencies, seconds: per collective, and per step on each link
  /// (src/graph/tuning.cc: baseLat 8.4 us, hwLat NVLink 3.4 us, network 14 us).
  double collective_latency = 8.4e-6;
  double node_latency = 3.4e-6;
  double net_latency = 14e-6;
  /// What a process holds outside its tensors: the CUDA context, NCCL's and cuBLAS's buffers and
  /// the caching allocator's fragmentation; < 0: the default, 2 GiB + 5% of the memory.
  double reserve_bytes = -1;
  /// The roofline's constants (fitted, see above): the share of the matmul peak a large matmul
  /// reaches, of the memory bandwidth an element-wise pass reaches, of a link's bandwidth a
  /// collective reaches, and one kernel's launch and tail.
  double matmul_efficiency = 0.75;
  double memory_efficiency = 0.7;
  double link_efficiency = 0.6;
  double launch_seconds = 5e-6;

  double reserve() const;
  /// "h100: 989 TFLOP/s bf16, 80 GiB at 3350 GB/s, 450 GB/s in the node, 50 GB/s across".
  std::string describe() const;
  /// Throws ConfigError naming the file and the field on a missing, non-numeric or negative
  /// figure.
  static GpuModel read(const std::string& path);
};

/// A100 40/80 GB (SXM4), H100 SXM, H200, B200: each a DGX/HGX node of 8.
const std::vector<GpuModel>& gpu_presets();

/// The preset called `name` (case-insensitive; "a100" is the 80 GB one), or the device file at
/// that path; throws ConfigError listing the presets otherwise.
GpuModel find_gpu(const std::string& name);

}  // namespace triax
