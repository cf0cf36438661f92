#include "schedules/schedule.h"

#include <algorithm>
#include <deque>
#include <sstream>

#include "core/error.h"

namespace triax {
namespace {

Action forward(int chunk, int mb) {
  return Action{ActionKind::kForward, chunk, mb, -1};
}
Action backward(int chunk, int mb) {
  return Action{ActionKind::kBackward, chunk, mb, -1};
}
Action input_grad(int chunk, int mb) {
  return Action{ActionKind::kBackwardInput, chunk, mb, -1};
}
Action weight_grad(int chunk, int mb) {
  return Action{ActionKind::kBackwardWeight, chunk, mb, -1};
}

void check_sizes(int stages, int microbatches, int chunks) {
  if (stages < 1) throw ConfigError(str("parallel.pipeline: ", stages, " must be >= 1"));
  if (microbatches < 1) {
    throw ConfigError(str("schedule.microbatches: ", microbatches, " must be >= 1"));
  }
  if (chunks < 1) throw ConfigError(str("schedule.chunks_per_rank: ", chunks, " must be >= 1"));
}

}  // namespace

bool is_compute(ActionKind kind) {
  return kind == ActionKind::kForward || kind == ActionKind::kBackward ||
         kind == ActionKind::kBackwardInput || kind == ActionKind::kBackwardWeight;
}

const char* action_name(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward:
      return "F";
    case ActionKind::kBackward:
      return "B";
    case ActionKind::kBackwardInput:
      return "I";
    case ActionKind::kBackwardWeight:
      return "W";
    case ActionKind::kSendActivation:
      return "sendA";
    case ActionKind::kRecvActivation:
      return "recvA";
    case ActionKind::kSendGrad:
      return "sendG";
    case ActionKind::kRecvGrad:
      return "recvG";
  }
  return "?";
}

std::string Schedule::table() const {
  std::ostringstream out;
  out << name << ": p=" << stages << " m=" << microbatches << " v=" << chunks << "\n";
  for (size_t r = 0; r < ranks.size(); ++r) {
    out << "  rank " << r << ":";
    for (const Action& a : ranks[r]) {
      if (!is_compute(a.kind)) continue;
      out << " " << action_name(a.kind) << a.microbatch;
      if (chunks > 1) out << "c" << a.chunk;
    }
    out << "\n";
  }
  return out.str();
}

Schedule with_communication(const std::string& name, const StagePlacement& placement,
                            int microbatches, const std::vector<std::vector<Action>>& compute) {
  Schedule schedule;
  schedule.name = name;
  schedule.stages = placement.ranks();
  schedule.microbatches = microbatches;
  schedule.chunks = placement.chunks();
  schedule.shape = placement.shape();
  const int stages = placement.ranks();
  const int last = placement.stages() - 1;
  for (int r = 0; r < stages; ++r) {
    std::vector<Action> actions;
    for (const Action& a : compute[static_cast<size_t>(r)]) {
      const int s = schedule.stage_of(r, a.chunk);
      const int prev_rank = s > 0 ? schedule.rank_of(s - 1) : -1;
      const int next_rank = s < last ? schedule.rank_of(s + 1) : -1;
      if (a.kind == ActionKind::kBackwardWeight) {
        actions.push_back(a);
      } else if (a.kind == ActionKind::kForward) {
        if (s > 0)
          actions.push_back({ActionKind::kRecvActivation, a.chunk, a.microbatch, prev_rank});
        actions.push_back(a);
        if (s < last)
          actions.push_back({ActionKind::kSendActivation, a.chunk, a.microbatch, next_rank});
      } else {
        if (s < last) actions.push_back({ActionKind::kRecvGrad, a.chunk, a.microbatch, next_rank});
        actions.push_back(a);
        if (s > 0) actions.push_back({ActionKind::kSendGrad, a.chunk, a.microbatch, prev_rank});
      }
    }
    schedule.ranks.push_back(std::move(actions));
  }
  return schedule;
}

Schedule gpipe(int stages, int microbatches) {
  check_sizes(stages, microbatches, 1);
  std::vector<std::vector<Action>> compute(static_cast<size_t>(stages));
  for (auto& actions : compute) {
    for (int i = 0; i < microbatches; ++i) actions.push_back(forward(0, i));
    for (int i = 0; i < microbatches; ++i) actions.push_back(backward(0, i));
  }
  return with_communication("gpipe", StagePlacement::of(ScheduleKind::kGpipe, stages, 1),
                            microbatches, compute);
}

Schedule forward_only(const StagePlacement& placement, int microbatches) {
  const int stages = placement.ranks(), chunks = placement.chunks();
  check_sizes(stages, microbatches, chunks);
  std::vector<std::vector<Action>> compute(static_cast<size_t>(stages));
  for (auto& actions : compute) {
    for (int c = 0; c < chunks; ++c) {
      for (int i = 0; i < microbatches; ++i) actions.push_back(forward(c, i));
    }
  }
  Schedule schedule = with_communication("forward-only", placement, microbatches, compute);
  schedule.backward = false;
  return schedule;
}

Schedule one_f_one_b(int stages, int microbatches) {
  check_sizes(stages, microbatches, 1);
  std::vector<std::vector<Action>> compute(static_cast<size_t>(stages));
  for (int r = 0; r < stages; ++r) {
    auto& actions = compute[static_cast<size_t>(r)];
    const int warmup = std::min(stages - r - 1, microbatches);
    int next_forward = 0;
    int next_backward = 0;
    for (; next_forward < warmup; ++next_forward) actions.push_back(forward(0, next_forward));
    while (next_forward < microbatches) {  // steady state: one forward, one backward
      actions.push_back(forward(0, next_forward++));
      actions.push_back(backward(0, next_backward++));
    }
    while (next_backward < microbatches) actions.push_back(backward(0, next_backward++));
  }
  Schedule schedule = with_communication("1f1b", StagePlacement::of(ScheduleKind::k1F1B, stages, 1),
                                         microbatches, compute);
  for (int r = 0; r < stages; ++r)
    schedule.in_flight_bound.push_back(std::min(stages - r, microbatches));
  return schedule;
}

Schedule interleaved_one_f_one_b(int stages, int microbatches, int chunks) {
  check_sizes(stages, microbatches, chunks);
  // Megatron's order: forwards sweep micro-batches in groups of p, chunk by chunk; the k-th
  // forward is (chunk (k / p) % v, micro-batch (k / (p v)) p + k % p); backwards sweep chunks
  // in reverse.
  const int total = microbatches * chunks;
  const auto forward_of = [&](int k) {
    return forward((k / stages) % chunks, (k / (stages * chunks)) * stages + k % stages);
  };
  const auto backward_of = [&](int k) {
    return backward(chunks - 1 - (k / stages) % chunks,
                    (k / (stages * chunks)) * stages + k % stages);
  };
  std::vector<std::vector<Action>> compute(static_cast<size_t>(stages));
  for (int r = 0; r < stages; ++r) {
    auto& actions = compute[static_cast<size_t>(r)];
    const int warmup = microbatches == stages
                           ? total
                           : std::min(total, (stages - r - 1) * 2 + (chunks - 1) * stages);
    int f = 0;
    int b = 0;
    for (; f < warmup; ++f) actions.push_back(forward_of(f));
    while (f < total) {
      actions.push_back(forward_of(f++));
      actions.push_back(backward_of(b++));
    }
    while (b < total) actions.push_back(backward_of(b++));
  }
  return with_communication("interleaved",
                            StagePlacement::of(ScheduleKind::kInterleaved, stages, chunks),
                            microbatches, compute);
}

Schedule zero_bubble_h1(int stages, int microbatches) {
  check_sizes(stages, microbatches, 1);
  std::vector<std::vector<Action>> compute(static_cast<size_t>(stages));
  for (int r = 0; r < stages; ++r) {
    auto& actions = compute[static_cast<size_t>(r)];
    // 1F1B's forwards and input gradients; rank r keeps up to r weight passes pending, so it
    // holds at most (p - r) + r = p micro-batches (1F1B's peak, on rank 0), and the deferred
    // passes run in the cool-down, where 1F1B waits for gradients.
    std::deque<int> pending;
    const auto after_input = [&](int mb) {
      pending.push_back(mb);
      if (static_cast<int>(pending.size()) > r) {
        actions.push_back(weight_grad(0, pending.front()));
        pending.pop_front();
      }
    };
    const int warmup = std::min(stages - r - 1, microbatches);
    int next_forward = 0;
    int next_input = 0;
    for (; next_forward < warmup; ++next_forward) actions.push_back(forward(0, next_forward));
    while (next_forward < microbatches) {
      actions.push_back(forward(0, next_forward++));
      actions.push_back(input_grad(0, next_input));
      after_input(next_input++);
    }
    while (next_input < microbatches) {
      actions.push_back(input_grad(0, next_input));
      after_input(next_input++);
    }
    for (int mb : pending) actions.push_back(weight_grad(0, mb));
  }
  Schedule schedule = with_communication("zbh1", StagePlacement::of(ScheduleKind::kZbh1, stages, 1),
                                         microbatches, compute);
  schedule.in_flight_bound.assign(static_cast<size_t>(stages), std::min(stages, microbatches));
  return schedule;
}

Schedule zero_bubble_v(int stages, int microbatches) {
  check_sizes(stages, microbatches, 2);
  // A list scheduler in unit time steps (every action costs 1, messages are free): at each
  // step every idle rank starts the first ready action by priority — an input gradient (the
  // critical path; the earlier chunk first), else a forward (the later chunk first, so
  // micro-batches turn at the V's bottom) while fewer than 2p are in flight, else its oldest
  // pending weight pass.
  const int p = stages, m = microbatches, last = 2 * p - 1, limit = 2 * p;
  const StagePlacement placement = StagePlacement::of(ScheduleKind::kZbv, p, 2);
  std::vector<std::vector<int>> forward_end(2 * p, std::vector<int>(m, -1));
  std::vector<std::vector<int>> input_end(2 * p, std::vector<int>(m, -1));
  std::vector<int> next_forward(2 * p, 0), next_input(2 * p, 0), live(p, 0);
  std::vector<std::deque<std::pair<int, int>>> pending(p);  // (chunk, micro-batch)
  std::vector<std::vector<Action>> compute(static_cast<size_t>(p));
  const auto done = [](int end, int t) { return end >= 0 && end <= t; };
  int remaining = 3 * 2 * p * m;
  for (int t = 0; remaining > 0; ++t) {
    TRIAX_CHECK(t <= 8 * 2 * p * m + 4 * p, "zero_bubble_v: the list scheduler stalled");
    for (int r = 0; r < p; ++r) {
      Action chosen{ActionKind::kSendGrad, -1, -1, -1};  // none yet
      for (int c : {0, 1}) {                             // input gradients, the earlier chunk first
        const int s = placement.stage_of(r, c), k = next_input[s];
        if (k < m && done(forward_end[s][k], t) && (s == last || done(input_end[s + 1][k], t))) {
          chosen = input_grad(c, k);
          break;
        }
      }
      if (chosen.chunk < 0 && live[r] < limit) {
        for (int c : {1, 0}) {  // forwards, the later chunk first
          const int s = placement.stage_of(r, c), k = next_forward[s];
          if (k < m && (s == 0 || done(forward_end[s - 1][k], t))) {
            chosen = forward(c, k);
            break;
          }
        }
      }
      if (chosen.chunk < 0 && !pending[r].empty()) {
        chosen = weight_grad(pending[r].front().first, pending[r].front().second);
        pending[r].pop_front();
      }
      if (chosen.chunk < 0) continue;  // idle this step
      const int s = placement.stage_of(r, chosen.chunk);
      if (chosen.kind == ActionKind::kForward) {
        forward_end[s][chosen.microbatch] = t + 1;
        ++next_forward[s];
        ++live[r];
      } else if (chosen.kind == ActionKind::kBackwardInput) {
        input_end[s][chosen.microbatch] = t + 1;
        ++next_input[s];
        pending[r].emplace_back(chosen.chunk, chosen.microbatch);
      } else {
        --live[r];
      }
      compute[static_cast<size_t>(r)].push_back(chosen);
      --remaining;
    }
  }
  Schedule schedule = with_communication("zbv", placement, microbatches, compute);
  schedule.in_flight_bound.assign(static_cast<size_t>(p), limit);
  return schedule;
}

Schedule make_schedule(ScheduleKind kind, int stages, int microbatches, int chunks) {
  if (kind == ScheduleKind::kZbv) {
    if (chunks != 2) {
      throw ConfigError(str("schedule.chunks_per_rank: ", chunks,
                            " does not fit schedule.name: zbv, which places two chunks per rank "
                            "in a V (valid: 2)"));
    }
    return zero_bubble_v(stages, microbatches);
  }
  if (kind != ScheduleKind::kInterleaved) {
    if (chunks != 1) {
      throw ConfigError(str("schedule.chunks_per_rank: ", chunks,
                            " needs schedule.name: "
                            "interleaved (",
                            kind, " runs one chunk per rank; valid: 1)"));
    }
    if (kind == ScheduleKind::kZbh1) return zero_bubble_h1(stages, microbatches);
    return kind == ScheduleKind::kGpipe ? gpipe(stages, microbatches)
                                        : one_f_one_b(stages, microbatches);
  }
  if (chunks < 2) {
    throw ConfigError(str("schedule.chunks_per_rank: ", chunks,
                          " is too few for the "
                          "interleaved schedule (valid: >= 2; or schedule.name: 1f1b)"));
  }
  if (microbatches % stages != 0) {
    throw ConfigError(str("schedule.microbatches: ", microbatches,
                          " is not a multiple of "
                          "parallel.pipeline=",
                          stages,
                          ", which the interleaved schedule needs "
                          "(valid: ",
                          stages, ", ", 2 * stages, ", ", 3 * stages, ", ...)"));
  }
  return interleaved_one_f_one_b(stages, microbatches, chunks);
}

Schedule make_schedule(const std::string& name, int stages, int microbatches, int chunks) {
  ScheduleKind kind;
  if (!parse_choice(name, &kind)) {
    throw ConfigError(str("schedule.name: '", name, "' is not a schedule (valid: ",
                          join(choice_names<ScheduleKind>(), ", "), ")"));
  }
  return make_schedule(kind, stages, microbatches, chunks);
}

}  // namespace triax
