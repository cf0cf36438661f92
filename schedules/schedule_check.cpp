#include "schedules/schedule_check.h"

#include <map>
#include <set>
#include <tuple>

#include "core/error.h"

namespace triax {
namespace {

// A message: (is_gradient, receiving stage, micro-batch).
using MessageKey = std::tuple<bool, int, int>;

std::string describe(const Schedule& s, int rank, const Action& a) {
  std::string text =
      str(action_name(a.kind), " mb", a.microbatch, " stage ", s.stage_of(rank, a.chunk));
  if (a.peer >= 0) text += str(" peer ", a.peer);
  return text;
}

// The message an action sends or receives, and the rank holding its other side.
bool message_of(const Schedule& s, int rank, const Action& a, MessageKey* key, int* other_rank) {
  const int stage = s.stage_of(rank, a.chunk);
  int receiving_stage = 0, other_stage = 0;
  bool gradient = false;
  switch (a.kind) {
    case ActionKind::kSendActivation:
      receiving_stage = stage + 1;
      other_stage = stage + 1;
      break;
    case ActionKind::kRecvActivation:
      receiving_stage = stage;
      other_stage = stage - 1;
      break;
    case ActionKind::kSendGrad:
      gradient = true;
      receiving_stage = stage - 1;
      other_stage = stage - 1;
      break;
    case ActionKind::kRecvGrad:
      gradient = true;
      receiving_stage = stage;
      other_stage = stage + 1;
      break;
    default:
      return false;
  }
  *key = MessageKey{gradient, receiving_stage, a.microbatch};
  *other_rank = other_stage >= 0 && other_stage < s.total_stages() ? other_stage % s.stages : -1;
  return true;
}

}  // namespace

SimulationResult simulate(const Schedule& s, const SimulationCosts& costs) {
  const size_t p = s.ranks.size();
  SimulationResult result;
  result.peak_activations.assign(p, 0);
  result.timings.resize(p);
  for (size_t r = 0; r < p; ++r) result.timings[r].resize(s.ranks[r].size());
  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0.0);
  std::vector<int> live(p, 0);
  std::map<MessageKey, double> arrived;  // message -> time it can be received
  double busy = 0;
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < p; ++r) {
      while (next[r] < s.ranks[r].size()) {
        const Action& a = s.ranks[r][next[r]];
        ActionTiming& t = result.timings[r][next[r]];
        t.start = clock[r];
        MessageKey key;
        int other = 0;
        if (a.kind == ActionKind::kForward || a.kind == ActionKind::kBackward) {
          const double cost = a.kind == ActionKind::kForward ? costs.forward : costs.backward;
          clock[r] += cost;
          busy += cost;
          live[r] += a.kind == ActionKind::kForward ? 1 : -1;
          result.peak_activations[r] = std::max(result.peak_activations[r], live[r]);
        } else if (message_of(s, static_cast<int>(r), a, &key, &other)) {
          if (a.kind == ActionKind::kSendActivation || a.kind == ActionKind::kSendGrad) {
            arrived[key] = clock[r] + costs.transfer;
          } else {
            const auto it = arrived.find(key);
            if (it == arrived.end()) break;  // blocked until the sender gets there
            t.start = clock[r] = std::max(clock[r], it->second);
          }
        }
        t.end = clock[r];
        ++next[r];
        progress = true;
      }
    }
  }
  std::vector<std::string> stuck;
  for (size_t r = 0; r < p; ++r) {
    if (next[r] < s.ranks[r].size()) {
      stuck.push_back(
          str("rank ", r, " waits at ", describe(s, static_cast<int>(r), s.ranks[r][next[r]])));
    }
    result.makespan = std::max(result.makespan, clock[r]);
  }
  result.finished = stuck.empty();
  result.stuck = join(stuck, "; ");
  result.bubble_fraction =
      result.makespan > 0 ? 1.0 - busy / (static_cast<double>(p) * result.makespan) : 0.0;
  return result;
}

void check_schedule(const Schedule& s) {
  std::vector<std::string> problems;
  if (static_cast<int>(s.ranks.size()) != s.stages) {
    problems.push_back(
        str("the schedule lists ", s.ranks.size(), " ranks for ", s.stages, " stages"));
  }
  std::map<MessageKey, int> sends, receives;  // message -> count
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    std::map<std::pair<int, int>, int> forwards, backwards;  // (chunk, mb) -> position
    for (size_t i = 0; i < s.ranks[r].size(); ++i) {
      const Action& a = s.ranks[r][i];
      if (a.chunk < 0 || a.chunk >= s.chunks || a.microbatch < 0 ||
          a.microbatch >= s.microbatches) {
        problems.push_back(
            str("rank ", r, ": ", describe(s, static_cast<int>(r), a), " is out of range"));
        continue;
      }
      const auto id = std::make_pair(a.chunk, a.microbatch);
      if (a.kind == ActionKind::kForward || a.kind == ActionKind::kBackward) {
        auto& seen = a.kind == ActionKind::kForward ? forwards : backwards;
        if (seen.count(id))
          problems.push_back(
              str("rank ", r, ": ", describe(s, static_cast<int>(r), a), " appears twice"));
        seen[id] = static_cast<int>(i);
        if (a.kind == ActionKind::kBackward && !forwards.count(id)) {
          problems.push_back(str("rank ", r, ": ", describe(s, static_cast<int>(r), a),
                                 " comes before its forward"));
        }
        continue;
      }
      MessageKey key;
      int other = -1;
      message_of(s, static_cast<int>(r), a, &key, &other);
      if (other < 0 || other != a.peer) {
        problems.push_back(str("rank ", r, ": ", describe(s, static_cast<int>(r), a),
                               " names peer ", a.peer, " but the other side is on rank ", other));
      }
      const bool is_send = a.kind == ActionKind::kSendActivation || a.kind == ActionKind::kSendGrad;
      ++(is_send ? sends : receives)[key];
    }
    for (int c = 0; c < s.chunks; ++c) {
      for (int mb = 0; mb < s.microbatches; ++mb) {
        if (!s.backward && backwards.count({c, mb})) {
          problems.push_back(str("rank ", r, ": chunk ", c, " micro-batch ", mb,
                                 " has a backward in a forward-only schedule"));
        }
        if (!forwards.count({c, mb}) || (s.backward && !backwards.count({c, mb}))) {
          problems.push_back(str("rank ", r, ": chunk ", c, " micro-batch ", mb, " lacks its ",
                                 forwards.count({c, mb}) ? "backward" : "forward"));
        }
      }
    }
  }
  for (const auto& [key, count] : sends) {
    if (receives[key] != count) {
      problems.push_back(str(std::get<0>(key) ? "gradient" : "activation", " of micro-batch ",
                             std::get<2>(key), " for stage ", std::get<1>(key),
                             " is sent but never received"));
    }
  }
  for (const auto& [key, count] : receives) {
    if (sends[key] != count) {
      problems.push_back(str(std::get<0>(key) ? "gradient" : "activation", " of micro-batch ",
                             std::get<2>(key), " for stage ", std::get<1>(key),
                             " is received but never sent"));
    }
  }
  if (problems.empty()) {
    const SimulationResult sim = simulate(s);
    if (!sim.finished) problems.push_back("deadlock: " + sim.stuck);
  }
  if (!problems.empty()) {
    throw Error(str("schedule ", s.name, " (p=", s.stages, " m=", s.microbatches, " v=", s.chunks,
                    ") is invalid:\n  ", join(problems, "\n  ")));
  }
}

}  // namespace triax
