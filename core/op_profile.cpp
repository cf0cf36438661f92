#include "core/op_profile.h"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <cstdio>
#include <map>

namespace triax {
namespace {

namespace prof = torch::autograd::profiler;

struct Open {
  uint64_t handle;
  const prof::LegacyEvent* push;
  double child_us;
};

}  // namespace

OpProfile::OpProfile() {
  prof::enableProfilerLegacy(
      torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU));
  recording_ = true;
}

OpProfile::~OpProfile() {
  if (recording_) {
    try {
      stop();
    } catch (...) {
    }
  }
}

std::vector<OpTotal> OpProfile::stop() {
  recording_ = false;
  const prof::thread_event_lists lists = prof::disableProfilerLegacy();
  std::map<std::string, OpTotal> by_name;
  for (const auto& events : lists) {
    // Pushes and pops pair by handle; a pop's op is nested in whatever was opened before it and
    // is still open, which is where its time is subtracted as a child.
    std::vector<Open> open;
    for (const auto& e : events) {
      if (e.kind() == prof::EventKind::PushRange) {
        open.push_back({e.handle(), &e, 0.0});
      } else if (e.kind() == prof::EventKind::PopRange) {
        const auto it = std::find_if(open.rbegin(), open.rend(),
                                     [&](const Open& o) { return o.handle == e.handle(); });
        if (it == open.rend()) continue;  // opened before recording began
        const double total = it->push->cpuElapsedUs(e);
        OpTotal& row = by_name[it->push->name()];
        row.calls += 1;
        row.total_us += total;
        row.self_us += total - it->child_us;
        auto parent = std::next(it);
        if (parent != open.rend()) parent->child_us += total;
        open.erase(std::next(it).base());
      }
    }
  }
  std::vector<OpTotal> rows;
  for (auto& [name, row] : by_name) {
    row.name = name;
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(),
            [](const OpTotal& a, const OpTotal& b) { return a.self_us > b.self_us; });
  return rows;
}

std::string format_op_table(const std::vector<OpTotal>& totals, int top, int steps,
                            double step_us) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-58s %9s %11s %7s\n", "op (self time)", "calls/step",
                "us/step", "share");
  out += line;
  double shown = 0;
  for (int k = 0; k < top && k < static_cast<int>(totals.size()); ++k) {
    const OpTotal& row = totals[static_cast<size_t>(k)];
    std::string name = row.name;
    if (name.size() > 58) name = name.substr(0, 55) + "...";
    std::snprintf(line, sizeof line, "%-58s %9.1f %11.0f %6.1f%%\n", name.c_str(),
                  static_cast<double>(row.calls) / steps, row.self_us / steps,
                  100 * row.self_us / step_us);
    out += line;
    shown += row.self_us;
  }
  double all = 0;
  int64_t calls = 0;
  for (const OpTotal& row : totals) {
    all += row.self_us;
    calls += row.calls;
  }
  std::snprintf(line, sizeof line, "%-58s %9.1f %11.0f %6.1f%%\n", "(all ops)",
                static_cast<double>(calls) / steps, all / steps, 100 * all / step_us);
  out += line;
  std::snprintf(line, sizeof line, "%-58s %9s %11.0f %6.1f%%\n", "(outside any op)", "",
                (step_us - all) / steps, 100 * (step_us - all) / step_us);
  out += line;
  return out;
}

}  // namespace triax
