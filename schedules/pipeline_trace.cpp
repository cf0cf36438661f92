#include "schedules/pipeline_trace.h"

#include <algorithm>
#include <sstream>

#include "core/strings.h"

namespace triax {
namespace {

// The trace's colour classes: the split backward's halves apart from the whole one.
const char* category(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward:
      return "forward";
    case ActionKind::kBackwardInput:
      return "backward-input";
    case ActionKind::kBackwardWeight:
      return "backward-weight";
    default:
      return "backward";
  }
}

}  // namespace
namespace {
constexpr int kFields = 5;  // kind, chunk, micro-batch, start, end
}

PipelineTrace gather_trace(Communicator& pp, const std::vector<TraceEvent>& mine) {
  torch::Tensor longest = torch::tensor({static_cast<int64_t>(mine.size())});
  pp.all_reduce(longest, ReduceOp::kMax);
  const int64_t rows = longest.item<int64_t>();
  torch::Tensor table = torch::full({rows, kFields}, -1.0, torch::kDouble);  // -1 kind: padding
  for (size_t i = 0; i < mine.size(); ++i) {
    const TraceEvent& e = mine[i];
    table[static_cast<int64_t>(i)] = torch::tensor(
        {static_cast<double>(e.kind), double(e.chunk), double(e.microbatch), e.start_us, e.end_us},
        torch::kDouble);
  }
  const torch::Tensor all = pp.all_gather(table.unsqueeze(0));  // [ranks, rows, fields]
  PipelineTrace trace(static_cast<size_t>(pp.size()));
  for (int r = 0; r < pp.size(); ++r) {
    for (int64_t i = 0; i < rows; ++i) {
      const torch::Tensor row = all[r][i];
      if (row[0].item<double>() < 0) continue;
      trace[static_cast<size_t>(r)].push_back({static_cast<ActionKind>(row[0].item<int>()),
                                               row[1].item<int>(), row[2].item<int>(),
                                               row[3].item<double>(), row[4].item<double>()});
    }
  }
  return trace;
}

std::string chrome_trace_json(const PipelineTrace& trace, const std::string& title) {
  std::ostringstream out;
  out << "{\"traceEvents\":[\n";
  out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"" << title
      << "\"}}";
  for (size_t r = 0; r < trace.size(); ++r) {
    out << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" << r
        << ",\"args\":{\"name\":\"pp rank " << r << "\"}}";
    for (const TraceEvent& e : trace[r]) {
      const bool compute = is_compute(e.kind);
      const bool send = e.kind == ActionKind::kSendActivation || e.kind == ActionKind::kSendGrad;
      if (send) continue;  // posting a send takes no time worth drawing
      out << ",\n{\"name\":\"" << (compute ? "" : "wait ") << action_name(e.kind) << e.microbatch
          << (e.chunk > 0 ? str("c", e.chunk) : "") << "\",\"cat\":\""
          << (compute ? category(e.kind) : "wait") << "\",\"ph\":\"X\",\"pid\":0,\"tid\":" << r
          << ",\"ts\":" << e.start_us << ",\"dur\":" << std::max(0.0, e.end_us - e.start_us)
          << ",\"args\":{\"microbatch\":" << e.microbatch << ",\"chunk\":" << e.chunk << "}}";
    }
  }
  out << "\n]}\n";
  return out.str();
}

std::vector<double> busy_seconds(const PipelineTrace& trace) {
  std::vector<double> busy;
  for (const auto& events : trace) {
    busy.push_back(0.0);
    for (const TraceEvent& e : events) {
      if (is_compute(e.kind)) busy.back() += (e.end_us - e.start_us) * 1e-6;
    }
  }
  return busy;
}

double measured_bubble(const PipelineTrace& trace) {
  double busy = 0;
  double makespan = 0;
  for (const auto& events : trace) {
    for (const TraceEvent& e : events) {
      if (is_compute(e.kind)) busy += e.end_us - e.start_us;
      makespan = std::max(makespan, e.end_us);
    }
  }
  return makespan > 0 ? 1.0 - busy / (static_cast<double>(trace.size()) * makespan) : 0.0;
}

}  // namespace triax
