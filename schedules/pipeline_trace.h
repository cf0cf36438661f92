// defines: triax::gather_trace, triax::chrome_trace_json, triax::measured_bubble,
//          triax::busy_seconds
//
// A pipeline step as a picture: every rank's actions, gathered over the pipeline group, written
// as Chrome trace-event JSON (open it in https://ui.perfetto.dev or chrome://tracing), one track
// per pipeline rank. Forwards and backwards (B, or a split backward's I and W) are the work;
// receives are shown too, and their length is the time the rank sat waiting for a neighbour: the
// bubble made visible.
#pragma once

#include <string>
#include <vector>

#include "parallel/comm/communicator.h"
#include "schedules/pipeline_executor.h"

namespace triax {

using PipelineTrace = std::vector<std::vector<TraceEvent>>;  ///< per pipeline rank

/// Every pipeline rank's events, on every rank (collective over `pp`).
PipelineTrace gather_trace(Communicator& pp, const std::vector<TraceEvent>& mine);

/// The trace as Chrome trace-event JSON; `title` names the process track.
std::string chrome_trace_json(const PipelineTrace& trace, const std::string& title);

/// 1 - (time spent in forwards and backwards, all ranks) / (ranks x makespan).
double measured_bubble(const PipelineTrace& trace);

/// Per pipeline rank, the seconds it computed (F, B, I, W): unequal figures are unbalanced
/// stages (the first and last stages also hold the embedding and the loss).
std::vector<double> busy_seconds(const PipelineTrace& trace);

}  // namespace triax
