// defines: triax::check_outputs_writable, triax::check_written
//
// A run must not discover after an hour of training that it cannot write its results. Before
// any communication, every rank checks that each output location it will use can be written:
// run.dir (config.resolved.yaml, metrics.jsonl, sample.txt, flight/), the checkpoint folder and
// the trace file's folder; a failure is a ConfigError naming the key, the path and the OS's
// reason. During the run, every write is checked too (check_written): a full disk or an I/O
// error names the path and the reason on the rank that hit it, and the run stops non-zero
// rather than exit 0 having silently lost metrics.
#pragma once

#include <ostream>
#include <string>

#include "core/config.h"

namespace triax {

/// Throws ConfigError naming the first key whose location cannot be created or written.
void check_outputs_writable(const Config& config);

/// Throws Error("PATH: cannot write WHAT: REASON") when `stream` has failed (flushes first).
void check_written(std::ostream& stream, const std::string& path, const char* what);

}  // namespace triax
