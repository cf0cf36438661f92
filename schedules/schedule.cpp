#include "schedules/schedule.h"

#include <algorithm>
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

void check_sizes(int stages, int microbatches, int chunks) {
  if (stages < 1) throw ConfigError(str("parallel.pipeline: ", stages, " must be >= 1"));
  if (microbatches < 1) {
    throw ConfigError(str("schedule.microbatches: ", microbatches, " must be >= 1"));
  }
  if (chunks < 1) throw ConfigError(str("schedule.chunks_per_rank: ", chunks, " must be >= 1"));
}

}  // namespace

const char* action_name(ActionKind kind) {
  switch (kind) {
    case ActionKind::kForward:
      return "F";
    case ActionKind::kBackward:
      return "B";
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
      if (a.kind != ActionKind::kForward && a.kind != ActionKind::kBackward) continue;
      out << " " << action_name(a.kind) << a.microbatch;
      if (chunks > 1) out << "c" << a.chunk;
    }
    out << "\n";
  }
  return out.str();
}

Schedule with_communication(const std::string& name, int stages, int microbatches, int chunks,
                            const std::vector<std::vector<Action>>& compute) {
  Schedule schedule{name, stages, microbatches, chunks, {}};
  const int last = stages * chunks - 1;
  for (int r = 0; r < stages; ++r) {
    std::vector<Action> actions;
    for (const Action& a : compute[static_cast<size_t>(r)]) {
      const int s = schedule.stage_of(r, a.chunk);
      const int prev_rank = (s - 1 + stages) % stages;
      const int next_rank = (s + 1) % stages;
      if (a.kind == ActionKind::kForward) {
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
  return with_communication("gpipe", stages, microbatches, 1, compute);
}

Schedule forward_only(int stages, int microbatches, int chunks) {
  check_sizes(stages, microbatches, chunks);
  std::vector<std::vector<Action>> compute(static_cast<size_t>(stages));
  for (auto& actions : compute) {
    for (int c = 0; c < chunks; ++c) {
      for (int i = 0; i < microbatches; ++i) actions.push_back(forward(c, i));
    }
  }
  Schedule schedule = with_communication("forward-only", stages, microbatches, chunks, compute);
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
  return with_communication("1f1b", stages, microbatches, 1, compute);
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
  return with_communication("interleaved", stages, microbatches, chunks, compute);
}

Schedule make_schedule(ScheduleKind kind, int stages, int microbatches, int chunks) {
  if (kind != ScheduleKind::kInterleaved) {
    if (chunks != 1) {
      throw ConfigError(str("schedule.chunks_per_rank: ", chunks,
                            " needs schedule.name: "
                            "interleaved (",
                            kind, " runs one chunk per rank; valid: 1)"));
    }
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
