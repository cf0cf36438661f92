// defines: triax::OpProfile, triax::OpTotal
//
// Per-operator time of a stretch of code, from LibTorch's own profiler (the legacy autograd
// profiler: the same record-function events `torch.autograd.profiler` reads in Python, so the
// two sides' tables compare like for like). Self time is an op's time minus the ops it called;
// autograd's backward nodes ("autograd::engine::evaluate_function: ...Backward0") appear as their
// own rows with the kernels they run as children.
#pragma once

#include <string>
#include <vector>

namespace triax {

struct OpTotal {
  std::string name;
  int64_t calls = 0;
  double self_us = 0;   ///< time in this op itself, children excluded
  double total_us = 0;  ///< time including the ops it called
};

class OpProfile {
 public:
  /// Starts recording on this thread (and threads it launches work on).
  OpProfile();
  /// Stops if still recording.
  ~OpProfile();
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  /// Stops recording; returns every op name's totals, largest self time first.
  std::vector<OpTotal> stop();

 private:
  bool recording_ = false;
};

/// The table's rows as text: the `top` largest by self time, each with its share of `step_us`
/// (the time the profiled steps took) and per-step figures for `steps` steps.
std::string format_op_table(const std::vector<OpTotal>& totals, int top, int steps, double step_us);

}  // namespace triax
