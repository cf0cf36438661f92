#include "schedules/schedule_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"
#include "schedules/action_memory.h"

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
  *other_rank = other_stage >= 0 && other_stage < s.total_stages() ? s.rank_of(other_stage) : -1;
  return true;
}

// When each message can be received, by (is_gradient, receiving stage, micro-batch): a flat
// table, not a map (a planner simulates thousands of schedules; the map was most of their time).
class Arrivals {
 public:
  explicit Arrivals(const Schedule& s)
      : stages_(static_cast<size_t>(s.total_stages()) + 2),
        microbatches_(static_cast<size_t>(s.microbatches)),
        at_(2 * stages_ * microbatches_, -1.0) {}
  void set(const MessageKey& key, double time) { at_[index(key)] = time; }
  /// The time, or null when the message has not been sent.
  const double* find(const MessageKey& key) const {
    const double* at = &at_[index(key)];
    return *at >= 0 ? at : nullptr;
  }

 private:
  size_t index(const MessageKey& key) const {
    const auto [gradient, stage, microbatch] = key;
    TRIAX_CHECK(stage >= -1 && static_cast<size_t>(stage + 1) < stages_ && microbatch >= 0 &&
                    static_cast<size_t>(microbatch) < microbatches_,
                "a message of stage ", stage, ", micro-batch ", microbatch,
                " outside the schedule (check_schedule it first)");
    return ((gradient ? stages_ : 0) + static_cast<size_t>(stage + 1)) * microbatches_ +
           static_cast<size_t>(microbatch);
  }
  size_t stages_, microbatches_;
  std::vector<double> at_;
};

}  // namespace

double SimulationCosts::cost(ActionKind kind, int rank) const {
  if (rank >= 0 && rank < static_cast<int>(per_rank.size())) {
    const auto& c = per_rank[static_cast<size_t>(rank)];
    switch (kind) {
      case ActionKind::kForward:
        return c[0];
      case ActionKind::kBackward:
        return c[1];
      case ActionKind::kBackwardInput:
        return c[2];
      case ActionKind::kBackwardWeight:
        return c[3];
      default:
        return 0.0;
    }
  }
  switch (kind) {
    case ActionKind::kForward:
      return forward;
    case ActionKind::kBackward:
      return backward;
    case ActionKind::kBackwardInput:
      return input();
    case ActionKind::kBackwardWeight:
      return weight();
    default:
      return 0.0;
  }
}

namespace {

// A result with room for every rank's figures and every action's timing.
SimulationResult sized_result(const Schedule& s) {
  const size_t p = s.ranks.size();
  SimulationResult result;
  result.peak_activations.assign(p, 0);
  result.busy.assign(p, 0.0);
  result.timings.resize(p);
  for (size_t r = 0; r < p; ++r) result.timings[r].resize(s.ranks[r].size());
  return result;
}

// The end of a simulation: which ranks could not finish and where they wait, the makespan and
// the idle fraction (busy: the sum of all ranks' compute time).
void finish_result(const Schedule& s, const std::vector<size_t>& next, double makespan, double busy,
                   SimulationResult* result) {
  std::vector<std::string> stuck;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    if (next[r] < s.ranks[r].size()) {
      stuck.push_back(
          str("rank ", r, " waits at ", describe(s, static_cast<int>(r), s.ranks[r][next[r]])));
    }
  }
  const double p = static_cast<double>(s.ranks.size());
  result->makespan = makespan;
  result->finished = stuck.empty();
  result->stuck = join(stuck, "; ");
  result->bubble_fraction = makespan > 0 ? 1.0 - busy / (p * makespan) : 0.0;
}

}  // namespace

SimulationResult simulate(const Schedule& s, const SimulationCosts& costs) {
  const size_t p = s.ranks.size();
  SimulationResult result = sized_result(s);
  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0.0);
  std::vector<int> live(p, 0);
  Arrivals arrived(s);
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
        if (is_compute(a.kind)) {
          const double cost = costs.cost(a.kind, static_cast<int>(r));
          clock[r] += cost;
          busy += cost;
          result.busy[r] += cost;
          // A micro-batch's activations are held from F until its backward is complete: B, or
          // W after a split (W needs what I kept; schedules/action_memory.h).
          live[r] += action_memory(a.kind).micro_batches;
          result.peak_activations[r] = std::max(result.peak_activations[r], live[r]);
        } else if (message_of(s, static_cast<int>(r), a, &key, &other)) {
          if (a.kind == ActionKind::kSendActivation || a.kind == ActionKind::kSendGrad) {
            arrived.set(key, clock[r] + costs.transfer);
          } else {
            const double* at = arrived.find(key);
            if (!at) break;  // blocked until the sender gets there
            t.start = clock[r] = std::max(clock[r], *at);
          }
        }
        t.end = clock[r];
        ++next[r];
        progress = true;
      }
    }
  }
  const double makespan = clock.empty() ? 0.0 : *std::max_element(clock.begin(), clock.end());
  finish_result(s, next, makespan, busy, &result);
  return result;
}

SimulationResult simulate_shared(const Schedule& s, const SimulationCosts& costs,
                                 const std::function<double(int)>& rate) {
  const size_t p = s.ranks.size();
  SimulationResult result = sized_result(s);
  std::vector<size_t> next(p, 0);
  std::vector<double> remaining(p, -1.0);  // work left of the running compute action; -1: none
  std::vector<int> live(p, 0);
  Arrivals arrived(s);
  double now = 0, busy = 0;
  for (;;) {
    // Everything that takes no time: sends, receives whose message is there, starting computes.
    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t r = 0; r < p; ++r) {
        while (next[r] < s.ranks[r].size() && remaining[r] < 0) {
          const Action& a = s.ranks[r][next[r]];
          ActionTiming& t = result.timings[r][next[r]];
          MessageKey key;
          int other = 0;
          if (is_compute(a.kind)) {
            remaining[r] = costs.cost(a.kind, static_cast<int>(r));
            t.start = now;
            break;
          }
          if (message_of(s, static_cast<int>(r), a, &key, &other)) {
            if (a.kind == ActionKind::kSendActivation || a.kind == ActionKind::kSendGrad) {
              arrived.set(key, now + costs.transfer);
            } else {
              const double* at = arrived.find(key);
              if (!at || *at > now) break;  // not there yet
            }
          }
          t.start = t.end = now;
          ++next[r];
          progress = true;
        }
      }
    }
    int running = 0;
    for (size_t r = 0; r < p; ++r) running += remaining[r] >= 0;
    // The next event: a compute finishing at the shared rate, or a message arriving.
    const double speed = running > 0 ? rate(running) : 1.0;
    double step = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < p; ++r) {
      if (remaining[r] >= 0) step = std::min(step, remaining[r] / speed);
      if (remaining[r] < 0 && next[r] < s.ranks[r].size()) {
        MessageKey key;
        int other = 0;
        if (message_of(s, static_cast<int>(r), s.ranks[r][next[r]], &key, &other)) {
          const double* at = arrived.find(key);
          if (at && *at > now) step = std::min(step, *at - now);
        }
      }
    }
    if (!std::isfinite(step)) break;  // finished, or stuck
    now += step;
    busy += step * running;
    for (size_t r = 0; r < p; ++r) {
      if (remaining[r] < 0) continue;
      result.busy[r] += step;
      remaining[r] -= step * speed;
      if (remaining[r] > 1e-12 * std::max(1.0, now)) continue;
      const Action& a = s.ranks[r][next[r]];
      live[r] += action_memory(a.kind).micro_batches;
      result.peak_activations[r] = std::max(result.peak_activations[r], live[r]);
      result.timings[r][next[r]].end = now;
      remaining[r] = -1.0;
      ++next[r];
    }
  }
  finish_result(s, next, now, busy, &result);
  return result;
}

namespace {

using Problems = std::vector<std::string>;
using MessageCounts = std::map<MessageKey, int>;  // message -> count
// (chunk, mb) -> position of its F, B, I, W in the rank's list
using Seen = std::map<ActionKind, std::map<std::pair<int, int>, int>>;

// Rank r's actions one by one: in range, each compute once and after what it needs, each
// message naming the rank its other side is on. Counts the messages it sends and receives.
Seen check_rank_order(const Schedule& s, size_t r, Problems& problems, MessageCounts& sends,
                      MessageCounts& receives) {
  Seen seen;
  for (size_t i = 0; i < s.ranks[r].size(); ++i) {
    const Action& a = s.ranks[r][i];
    if (a.chunk < 0 || a.chunk >= s.chunks || a.microbatch < 0 || a.microbatch >= s.microbatches) {
      problems.push_back(
          str("rank ", r, ": ", describe(s, static_cast<int>(r), a), " is out of range"));
      continue;
    }
    const auto id = std::make_pair(a.chunk, a.microbatch);
    if (is_compute(a.kind)) {
      auto& mine = seen[a.kind];
      if (mine.count(id))
        problems.push_back(
            str("rank ", r, ": ", describe(s, static_cast<int>(r), a), " appears twice"));
      mine[id] = static_cast<int>(i);
      const auto before = [&](ActionKind first, const char* what) {
        if (!seen[first].count(id)) {
          problems.push_back(str("rank ", r, ": ", describe(s, static_cast<int>(r), a),
                                 " comes before its ", what));
        }
      };
      if (a.kind == ActionKind::kBackward || a.kind == ActionKind::kBackwardInput) {
        before(ActionKind::kForward, "forward");
      }
      if (a.kind == ActionKind::kBackwardWeight) before(ActionKind::kBackwardInput, "I");
      continue;
    }
    MessageKey key;
    int other = -1;
    message_of(s, static_cast<int>(r), a, &key, &other);
    if (other < 0 || other != a.peer) {
      problems.push_back(str("rank ", r, ": ", describe(s, static_cast<int>(r), a), " names peer ",
                             a.peer, " but the other side is on rank ", other));
    }
    const bool is_send = a.kind == ActionKind::kSendActivation || a.kind == ActionKind::kSendGrad;
    ++(is_send ? sends : receives)[key];
  }
  return seen;
}

// Every (chunk, micro-batch) of rank r has its forward and exactly one kind of backward.
void check_rank_complete(const Schedule& s, size_t r, Seen& seen, Problems& problems) {
  for (int c = 0; c < s.chunks; ++c) {
    for (int mb = 0; mb < s.microbatches; ++mb) {
      const std::pair<int, int> id{c, mb};
      const bool f = seen[ActionKind::kForward].count(id) > 0;
      const bool b = seen[ActionKind::kBackward].count(id) > 0;
      const bool in = seen[ActionKind::kBackwardInput].count(id) > 0;
      const bool w = seen[ActionKind::kBackwardWeight].count(id) > 0;
      const std::string where = str("rank ", r, ": chunk ", c, " micro-batch ", mb);
      if (!f) problems.push_back(where + " lacks its forward");
      if (!s.backward) {
        if (b || in || w) problems.push_back(where + " has a backward in a forward-only schedule");
        continue;
      }
      if (b && (in || w)) problems.push_back(where + " has both a whole backward and a split one");
      if (!b && !in) problems.push_back(where + " lacks its backward");
      if (in && !w) problems.push_back(where + " lacks the W of its split backward");
      if (w && !in) problems.push_back(where + " has a W without its I");
    }
  }
}

// Every message sent is received as often, and the other way round.
void check_messages_pair(const MessageCounts& sends, MessageCounts receives, Problems& problems) {
  MessageCounts sent = sends;
  for (const auto& [key, count] : sends) {
    if (receives[key] != count) {
      problems.push_back(str(std::get<0>(key) ? "gradient" : "activation", " of micro-batch ",
                             std::get<2>(key), " for stage ", std::get<1>(key),
                             " is sent but never received"));
    }
  }
  for (const auto& [key, count] : receives) {
    if (sent[key] != count) {
      problems.push_back(str(std::get<0>(key) ? "gradient" : "activation", " of micro-batch ",
                             std::get<2>(key), " for stage ", std::get<1>(key),
                             " is received but never sent"));
    }
  }
}

// The schedule runs to its end, and no rank holds more micro-batches than it claims.
void check_simulation(const Schedule& s, Problems& problems) {
  const SimulationResult sim = simulate(s);
  if (!sim.finished) problems.push_back("deadlock: " + sim.stuck);
  // The peak depends only on each rank's order, so any costs show it.
  for (size_t r = 0; r < s.in_flight_bound.size() && r < sim.peak_activations.size(); ++r) {
    if (sim.peak_activations[r] > s.in_flight_bound[r]) {
      problems.push_back(str("rank ", r, " holds ", sim.peak_activations[r],
                             " micro-batches' activations at once, more than the ",
                             s.in_flight_bound[r], " the schedule claims"));
    }
  }
}

}  // namespace

void check_schedule(const Schedule& s) {
  Problems problems;
  if (static_cast<int>(s.ranks.size()) != s.stages) {
    problems.push_back(
        str("the schedule lists ", s.ranks.size(), " ranks for ", s.stages, " stages"));
  }
  MessageCounts sends, receives;
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    Seen seen = check_rank_order(s, r, problems, sends, receives);
    check_rank_complete(s, r, seen, problems);
  }
  check_messages_pair(sends, receives, problems);
  if (problems.empty()) check_simulation(s, problems);
  if (!problems.empty()) {
    throw Error(str("schedule ", s.name, " (p=", s.stages, " m=", s.microbatches, " v=", s.chunks,
                    ") is invalid:\n  ", join(problems, "\n  ")));
  }
}

}  // namespace triax
