#include "schedules/pipeline_executor.h"

#include "core/fault_point.h"
#include "core/flight_recorder.h"

#include <chrono>
#include <map>

#include "core/error.h"
#include "core/heap_usage.h"
#include "schedules/schedule_check.h"
#include "schedules/split_backward.h"

namespace triax {
namespace {

struct Slot {                // one (chunk, micro-batch) between its forward and its backward
  torch::Tensor input;       // received activation (requires grad), undefined on stage 0
  torch::Tensor output;      // forward output, or the scaled loss on the last stage
  torch::Tensor grad;        // gradient received for `output`
  torch::Tensor input_grad;  // the input's gradient from a split backward's I
};

// What a flight record and a timeout call the action at stage `s`.
std::string action_label(ActionKind kind, int s) {
  switch (kind) {
    case ActionKind::kRecvActivation:
      return str("forward activation, stage ", s, " <- stage ", s - 1);
    case ActionKind::kSendActivation:
      return str("forward activation, stage ", s, " -> stage ", s + 1);
    case ActionKind::kRecvGrad:
      return str("activation gradient, stage ", s, " <- stage ", s + 1);
    case ActionKind::kSendGrad:
      return str("activation gradient, stage ", s, " -> stage ", s - 1);
    case ActionKind::kForward:
      return str("forward, stage ", s);
    case ActionKind::kBackward:
      return str("backward, stage ", s);
    case ActionKind::kBackwardInput:
      return str("backward (input gradient), stage ", s);
    case ActionKind::kBackwardWeight:
      return str("backward (weight gradients), stage ", s);
  }
  return "pipeline action";
}

int message_tag(int receiving_stage, int microbatch, int microbatches, bool gradient) {
  return (receiving_stage * microbatches + microbatch) * 2 + (gradient ? 1 : 0);
}

}  // namespace

PipelineExecutor::PipelineExecutor(Communicator& pp, std::vector<int64_t> activation_shape,
                                   torch::ScalarType dtype)
    : pp_(pp), shape_(std::move(activation_shape)), dtype_(dtype) {}

double PipelineExecutor::run(const Schedule& schedule, const StageFunctions& stage) {
  TRIAX_CHECK(schedule.stages == pp_.size(), "schedule for ", schedule.stages,
              " stages on a pipeline group of ", pp_.size());
  if (!(schedule == checked_)) {
    check_schedule(schedule);
    checked_ = schedule;
  }
  // MPI guarantees tags up to 32767.
  TRIAX_CHECK(message_tag(schedule.total_stages(), 0, schedule.microbatches, false) < 32767,
              "too many stages x micro-batches for message tags: ", schedule.total_stages(), " x ",
              schedule.microbatches);
  const int rank = pp_.rank();
  const int last_stage = schedule.total_stages() - 1;
  const double scale = 1.0 / schedule.microbatches;
  std::map<std::pair<int, int>, Slot> slots;
  std::vector<std::pair<WorkPtr, torch::Tensor>> sends;  // kept alive until the step ends
  double loss_sum = 0;
  int live = 0;
  peak_live_ = 0;
  trace_.clear();
  peak_bytes_ = 0;
  // Per chunk, the B (or I) and the W passes still to run in this step.
  std::vector<int> backwards_left(static_cast<size_t>(schedule.chunks), schedule.microbatches);
  std::vector<int> weights_left(static_cast<size_t>(schedule.chunks), schedule.microbatches);
  std::map<std::pair<int, int>, DeferredWeights> deferred;  // what each I left for its W
  std::map<int, torch::Tensor> local;  // messages between two stages on this rank, by tag
  const int loss_rank = schedule.loss_rank();
  const int64_t heap_at_start = tracing_ ? heap_bytes_in_use() : 0;
  const auto begin = std::chrono::steady_clock::now();
  const auto now_us = [&] {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin)
        .count();
  };

  for (const Action& a : schedule.ranks[static_cast<size_t>(rank)]) {
    const double start = tracing_ ? now_us() : 0;
    const int s = schedule.stage_of(rank, a.chunk);
    Slot& slot = slots[{a.chunk, a.microbatch}];
    flight::set_microbatch(a.microbatch);
    const flight::Label label(action_label(a.kind, s));
    switch (a.kind) {
      case ActionKind::kRecvActivation: {
        const int tag = message_tag(s, a.microbatch, schedule.microbatches, false);
        torch::Tensor buffer;
        if (a.peer == rank) {
          buffer = local.at(tag);
          local.erase(tag);
        } else {
          buffer = torch::empty(shape_, dtype_);
          pp_.irecv(buffer, a.peer, tag)->wait();
        }
        slot.input = buffer.requires_grad_();
        break;
      }
      case ActionKind::kForward: {
        torch::Tensor out = stage.forward(a.chunk, a.microbatch, slot.input);
        if (s == last_stage) {
          out = stage.loss(a.microbatch, out);
          loss_sum += out.item<double>();
          out = out * scale;
        }
        slot.output = out;
        peak_live_ = std::max(peak_live_, ++live);
        break;
      }
      case ActionKind::kSendActivation: {
        if (fault_due("skip-send")) break;  // a test's dropped message (Note [Fault injection])
        const int tag = message_tag(s + 1, a.microbatch, schedule.microbatches, false);
        if (a.peer == rank) {  // a copy: the receiver's tensor becomes a leaf of its own graph
          local[tag] = slot.output.detach().clone();
          break;
        }
        torch::Tensor payload = slot.output.detach().contiguous();
        sends.emplace_back(pp_.isend(payload, a.peer, tag), payload);
        break;
      }
      case ActionKind::kRecvGrad: {
        const int tag = message_tag(s, a.microbatch, schedule.microbatches, true);
        if (a.peer == rank) {
          slot.grad = local.at(tag);
          local.erase(tag);
        } else {
          slot.grad = torch::empty(shape_, dtype_);
          pp_.irecv(slot.grad, a.peer, tag)->wait();
        }
        break;
      }
      case ActionKind::kBackward: {
        const bool last = --backwards_left[static_cast<size_t>(a.chunk)] == 0;
        if (stage.before_backward) stage.before_backward(a.chunk, a.microbatch, last);
        if (s == last_stage) {
          slot.output.backward();
        } else {
          torch::autograd::backward({slot.output}, {slot.grad});
        }
        slot.output = torch::Tensor();  // the graph is freed with it
        slot.grad = torch::Tensor();
        --live;
        if (s == 0) slots.erase({a.chunk, a.microbatch});
        break;
      }
      case ActionKind::kBackwardInput: {
        const bool last = --backwards_left[static_cast<size_t>(a.chunk)] == 0;
        if (stage.before_backward) stage.before_backward(a.chunk, a.microbatch, last);
        slot.input_grad = backward_input(slot.output, s == last_stage ? torch::Tensor() : slot.grad,
                                         slot.input, &deferred[{a.chunk, a.microbatch}]);
        slot.output = torch::Tensor();  // the graph lives on in `deferred` until W
        slot.grad = torch::Tensor();
        if (s == 0) slots.erase({a.chunk, a.microbatch});
        break;
      }
      case ActionKind::kBackwardWeight: {
        const bool last = --weights_left[static_cast<size_t>(a.chunk)] == 0;
        if (stage.before_backward) stage.before_backward(a.chunk, a.microbatch, last);
        const auto it = deferred.find({a.chunk, a.microbatch});
        TRIAX_CHECK(it != deferred.end(), "W of micro-batch ", a.microbatch, " before its I");
        const std::vector<torch::Tensor> params = backward_weight(&it->second);
        deferred.erase(it);  // the micro-batch's graph is freed here
        --live;
        if (stage.weights_ready) stage.weights_ready(a.chunk, params);
        break;
      }
      case ActionKind::kSendGrad: {
        if (fault_due("skip-send")) {  // a test's dropped message (Note [Fault injection])
          slots.erase({a.chunk, a.microbatch});
          break;
        }
        const torch::Tensor grad = slot.input_grad.defined() ? slot.input_grad : slot.input.grad();
        const int tag = message_tag(s - 1, a.microbatch, schedule.microbatches, true);
        if (a.peer == rank) {
          local[tag] = grad.detach().clone();
        } else {
          torch::Tensor payload = grad.contiguous();
          sends.emplace_back(pp_.isend(payload, a.peer, tag), payload);
        }
        slots.erase({a.chunk, a.microbatch});
        break;
      }
    }
    if (tracing_) {
      trace_.push_back({a.kind, a.chunk, a.microbatch, start, now_us()});
      peak_bytes_ = std::max(peak_bytes_, heap_bytes_in_use() - heap_at_start);
    }
  }
  flight::set_microbatch(-1);
  const flight::Label label("pipeline sends of the step");
  for (auto& send : sends) send.first->wait();

  // The loss lives on the last stage's rank; every rank reports it.
  torch::Tensor mean = torch::tensor({rank == loss_rank ? loss_sum * scale : 0.0}, torch::kDouble);
  pp_.broadcast(mean, loss_rank);
  return mean.item<double>();
}

}  // namespace triax
