// defines: triax::open_metrics_file
//
// run.dir/metrics.jsonl holds one record per optimizer step ({"step": N, ...}). A run that died
// after its last checkpoint wrote records for steps it will redo on resume; keeping them would
// leave two records for those steps (and two lines in the plot). So a resume first cuts the
// file back to the checkpoint's step (atomically), then appends.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace triax {

/// A fresh run (`resume_step` < 0) truncates `path`; a resume keeps the records of steps
/// 1..resume_step and drops later ones. Returns the stream positioned for appending; throws
/// Error naming the path when it cannot be written.
std::ofstream open_metrics_file(const std::string& path, int64_t resume_step);

}  // namespace triax
