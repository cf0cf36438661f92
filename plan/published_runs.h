// defines: triax::PublishedRun, triax::megatron_table1, triax::published_run_config,
//          triax::RunCheck, triax::check_published_run, triax::PublishedComparison,
//          triax::megatron_comparisons
//
// Training runs whose configuration and throughput are published, as the planner's check against
// the outside world (docs/plan.md, "Checked against published runs"): Megatron-LM's Table 1
// (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", SC 2021): GPT models of 1.7B to 1T parameters on 32 to 3072 A100 80 GB GPUs of
// Selene (DGX A100 nodes: 8 GPUs on NVSwitch, 8 x 200 Gb/s HDR InfiniBand), vocabulary 51,200,
// sequence 2048, mixed precision, full activation recompute; the micro-batch sizes and
// interleaved stages from the paper's scripts (Megatron-LM examples/sc21/run_table_1.sh).
// Throughput counts the paper's way (its equation 3, recompute included):
//   FLOPs per step = 96 B s l h^2 (1 + s / 6h + V / 16 l h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "plan/gpu_model.h"
#include "plan/predict.h"

namespace triax {

struct PublishedRun {
  const char* name;  ///< "1.7B"
  int64_t heads, hidden, layers;
  int tp, pp, dp;
  int64_t micro_batch, global_batch;
  int chunks;             ///< interleaved schedule's stages per rank (1: 1F1B)
  bool overlapped_sync;   ///< PyTorch DDP (overlaps backward) rather than Megatron's local DDP
  double tflops_per_gpu;  ///< published, achieved
};

/// Table 1's ten rows.
const std::vector<PublishedRun>& megatron_table1();

/// The run as a triax configuration (GPT, bf16 for the paper's fp16: the same A100 peak).
Config published_run_config(const PublishedRun& run);

struct RunCheck {
  double paper_flops = 0;  ///< per step, the paper's count
  double predicted_tflops_per_gpu = 0;
  double error = 0;  ///< predicted / published - 1
  Prediction prediction;
};

/// The planner's prediction of the run's layout on `device` (nodes of 8).
RunCheck check_published_run(const PublishedRun& run, const GpuModel& device);

/// One of the paper's layout comparisons (its figures 12-15, run by examples/sc21/
/// run_figure_*.sh): the runs compared, what the paper found, and whether predicted per-GPU
/// TFLOP/s (one per run, in order) say the same.
struct PublishedComparison {
  const char* figure;  ///< "Figure 13"
  std::string claim;   ///< the paper's finding, in words
  std::vector<PublishedRun> runs;
  std::function<bool(const std::vector<double>& tflops)> holds;
};
const std::vector<PublishedComparison>& megatron_comparisons();

}  // namespace triax
