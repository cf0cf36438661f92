// defines: triax::MixedPrecision
//
// What runs in bf16 and what stays fp32, decided once from the configuration and asked by every
// place that runs the model or moves its gradients (trainer, evaluation, generation, calibration,
// benchmarks, the planner, DDP):
//   compute  train.precision: bf16 runs the model's matmul-like ops in bf16 (forward, the loss's
//            head, a recomputed forward in backward) inside a compute scope (LibTorch's CPU
//            autocast, core/autocast_scope.h), by the bf16 matmul path train.bf16_matmul chooses
//            (core/bf16_matmul.h); fp32 runs everything in fp32.
//   fp32     always: the master weights, their gradients, the optimizer's state, checkpoints,
//            softmax and the loss (the models keep them fp32 explicitly), the residual stream.
//   wire     ddp.reduce_dtype: the dtype gradients cross the data-parallel group in (bf16 halves
//            the bytes; the sum is rounded once per bucket).
//   weights  train.param_dtype: bf16 makes the working weights the model computes with (and
//            ZeRO-3 gathers) bf16 roundings of an fp32 master copy that lives in the sharded
//            optimizer's slice; gradients still accumulate in fp32 (DdpOptions::param_dtype).
#pragma once

#include <torch/torch.h>

#include <string>

#include "core/autocast_scope.h"
#include "core/config.h"

namespace triax {

class MixedPrecision {
 public:
  explicit MixedPrecision(const Config& config)
      : bf16_compute_(config.train.precision == Precision::kBf16),
        bf16_wire_(config.ddp.reduce_dtype == Precision::kBf16),
        bf16_weights_(config.train.param_dtype == Precision::kBf16),
        matmul_(config.train.bf16_matmul) {}

  /// The model's matmuls run in bf16.
  bool bf16_compute() const { return bf16_compute_; }
  /// Opens the scope a forward (and the loss's head) runs in: bf16 autocast, or fp32 inside.
  /// `const auto scope = precision.compute_scope();` around the call.
  AutocastScope compute_scope() const { return AutocastScope(bf16_compute_); }
  /// The dtype of the compute's matmul operands (the MFU peak is measured in it).
  torch::ScalarType matmul_dtype() const {
    return bf16_compute_ ? torch::kBFloat16 : torch::kFloat;
  }

  /// The dtype gradients cross the dp group in.
  torch::ScalarType wire_dtype() const { return bf16_wire_ ? torch::kBFloat16 : torch::kFloat; }
  /// Bytes per gradient element on the dp group's wire (the planner's message sizes).
  double wire_bytes() const { return bf16_wire_ ? 2.0 : 4.0; }

  /// The dtype of the working weights (fp32: they are the master weights).
  torch::ScalarType param_dtype() const { return bf16_weights_ ? torch::kBFloat16 : torch::kFloat; }
  /// Bytes per working weight (the planner's and the memory benchmark's figures).
  double param_bytes() const { return bf16_weights_ ? 2.0 : 4.0; }

  /// Chooses the process's bf16 matmul path (train.bf16_matmul) before any compute; throws
  /// ConfigError naming the key where `native` would be inexact. Nothing to do in fp32.
  void select_matmul_path() const;
  /// "fp32", "bf16 (native)", "bf16 (emulated)": the arithmetic the compute runs in; on a GPU
  /// (`gpu`, run.device: cuda) "bf16 (CUDA autocast)".
  std::string describe(bool gpu = false) const;

 private:
  bool bf16_compute_;
  bool bf16_wire_;
  bool bf16_weights_;
  Bf16Matmul matmul_;
};

}  // namespace triax
