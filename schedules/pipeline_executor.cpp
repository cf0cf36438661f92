#include "schedules/pipeline_executor.h"

#include "core/fault_point.h"
#include "core/flight_recorder.h"

#include <chrono>
#include <map>

#include "core/error.h"
#include "schedules/action_memory.h"
#include "schedules/heap_usage.h"
#include "schedules/schedule_check.h"
#include "schedules/split_backward.h"

namespace triax {
namespace {

// One (chunk, micro-batch) between its forward and its backward, per unit (Note [Sample units]:
// one unit unless StageFunctions::units > 1).
struct Slot {
  torch::Tensor received;              // the received activation, undefined on stage 0
  std::vector<torch::Tensor> inputs;   // each unit's input (a leaf requiring grad), or undefined
  std::vector<torch::Tensor> outputs;  // each unit's output, or its scaled loss (last stage)
  torch::Tensor grad;                  // gradient received for the micro-batch's output
  std::vector<torch::Tensor> input_grads;  // each unit's input gradient from a split backward's I
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

namespace {

// One step of one rank's program: the state the actions share, and what each action does.
class StepRun {
 public:
  StepRun(Communicator& pp, const std::vector<int64_t>& shape, torch::ScalarType dtype,
          const Schedule& schedule, const StageFunctions& stage)
      : pp_(pp),
        shape_(shape),
        dtype_(dtype),
        schedule_(schedule),
        stage_(stage),
        rank_(pp.rank()),
        last_stage_(schedule.total_stages() - 1),
        units_(stage.units),
        scale_(1.0 / (schedule.microbatches * stage.units)),
        losses_(static_cast<size_t>(schedule.microbatches * stage.units), 0.0),
        backwards_left_(static_cast<size_t>(schedule.chunks), schedule.microbatches * stage.units),
        weights_left_(static_cast<size_t>(schedule.chunks), schedule.microbatches * stage.units) {
    TRIAX_CHECK(units_ >= 1, "StageFunctions::units must be at least 1, not ", units_);
  }

  void run(const Action& a) {
    const int s = schedule_.stage_of(rank_, a.chunk);
    Slot& slot = slots_[{a.chunk, a.microbatch}];
    flight::set_microbatch(a.microbatch);
    const flight::Label label(action_label(a.kind, s));
    switch (a.kind) {
      case ActionKind::kRecvActivation:
        slot.received = receive(a, s, false);
        break;
      case ActionKind::kForward:
        forward(a, s, slot);
        break;
      case ActionKind::kSendActivation:
        send_activation(a, s, slot);
        break;
      case ActionKind::kRecvGrad:
        slot.grad = receive(a, s, true);
        break;
      case ActionKind::kBackward:
        backward(a, s, slot);
        break;
      case ActionKind::kBackwardInput:
        input_gradient(a, s, slot);
        break;
      case ActionKind::kBackwardWeight:
        weight_gradients(a);
        break;
      case ActionKind::kSendGrad:
        send_grad(a, s, slot);
        break;
    }
    // What the rank holds (schedules/action_memory.h).
    live_ += action_memory(a.kind).micro_batches;
    peak_live_ = std::max(peak_live_, live_);
  }

  /// Completes the sends, and returns the mean loss on every pipeline rank; `losses` gets each
  /// unit's (each micro-batch's when units = 1).
  double finish(std::vector<double>* losses) {
    flight::set_microbatch(-1);
    const flight::Label label("pipeline sends of the step");
    for (auto& send : sends_) send.first->wait();
    // The losses live on the last stage's rank; every rank reports them: [mean, loss 0, ...].
    const int loss_rank = schedule_.loss_rank();
    std::vector<double> values{loss_sum_ * scale_};
    values.insert(values.end(), losses_.begin(), losses_.end());
    torch::Tensor all = torch::tensor(values, torch::kDouble);
    pp_.broadcast(all, loss_rank);
    const double* v = all.data_ptr<double>();
    losses->assign(v + 1, v + all.numel());
    return v[0];
  }

  int peak_live() const { return peak_live_; }

 private:
  // The activation (or its gradient) for stage s: from a stage on this rank without
  // communication, else received.
  torch::Tensor receive(const Action& a, int s, bool gradient) {
    const int tag = message_tag(s, a.microbatch, schedule_.microbatches, gradient);
    if (a.peer == rank_) {
      torch::Tensor buffer = local_.at(tag);
      local_.erase(tag);
      return buffer;
    }
    torch::Tensor buffer = torch::empty(shape_, dtype_);
    pp_.irecv(buffer, a.peer, tag)->wait();
    return buffer;
  }

  // Sent without waiting (completed at the end of the step), or handed to a stage on this rank
  // as a copy: the receiver's tensor becomes a leaf of its own graph.
  void send(const Action& a, int tag, const torch::Tensor& tensor) {
    if (a.peer == rank_) {
      local_[tag] = tensor.detach().clone();
      return;
    }
    torch::Tensor payload = tensor.detach().contiguous();
    sends_.emplace_back(pp_.isend(payload, a.peer, tag), payload);
  }

  int unit(const Action& a, int j) const { return a.microbatch * units_ + j; }

  // Unit j's part of a micro-batch tensor (its leading dimension), or the tensor itself.
  torch::Tensor part(const torch::Tensor& t, int j) const {
    return units_ == 1 || !t.defined() ? t : t.narrow(0, j, 1);
  }

  // The units' tensors as the micro-batch's one message.
  torch::Tensor joined(const std::vector<torch::Tensor>& parts) const {
    if (parts.size() == 1) return parts.front();
    std::vector<torch::Tensor> detached;
    for (const auto& t : parts) detached.push_back(t.detach());
    return torch::cat(detached, 0);
  }

  void forward(const Action& a, int s, Slot& slot) {
    slot.inputs.assign(static_cast<size_t>(units_), torch::Tensor());
    slot.outputs.assign(static_cast<size_t>(units_), torch::Tensor());
    for (int j = 0; j < units_; ++j) {
      torch::Tensor& input = slot.inputs[static_cast<size_t>(j)];
      // Each unit's input is a leaf of its own graph: its gradient is the unit's alone.
      if (slot.received.defined()) {
        input = part(slot.received, j).detach();
        const auto& needs = stage_.input_needs_grad;
        if (needs.empty() || needs[static_cast<size_t>(a.chunk)]) input.requires_grad_();
      }
      torch::Tensor out = stage_.forward(a.chunk, unit(a, j), input);
      if (s == last_stage_) {
        out = stage_.loss(unit(a, j), out);
        const double loss = out.item<double>();
        losses_[static_cast<size_t>(unit(a, j))] = loss;
        loss_sum_ += loss;
        if (!stage_.unscaled) out = out * scale_;
      }
      slot.outputs[static_cast<size_t>(j)] = out;
    }
    slot.received = torch::Tensor();
  }

  void send_activation(const Action& a, int s, Slot& slot) {
    if (fault_due("skip-send")) return;  // a test's dropped message (Note [Fault injection])
    send(a, message_tag(s + 1, a.microbatch, schedule_.microbatches, false), joined(slot.outputs));
    // Forward only (evaluation): no backward will read the outputs, the message holds them.
    if (!torch::GradMode::is_enabled()) slot.outputs.clear();
  }

  // Before a backward action on unit `u`: the stage's hook, told whether it is the chunk's last
  // of its kind.
  void before_backward(const Action& a, int u, std::vector<int>& left) {
    const bool last = --left[static_cast<size_t>(a.chunk)] == 0;
    if (stage_.before_backward) stage_.before_backward(a.chunk, u, last);
  }

  void backward(const Action& a, int s, Slot& slot) {
    for (int j = 0; j < units_; ++j) {
      before_backward(a, unit(a, j), backwards_left_);
      torch::Tensor& output = slot.outputs[static_cast<size_t>(j)];
      if (!output.requires_grad()) {
        // All of this chunk and before it frozen: nothing to compute.
      } else if (s == last_stage_) {
        output.backward();
      } else {
        torch::autograd::backward({output}, {part(slot.grad, j)});
      }
      output = torch::Tensor();  // the unit's graph is freed with it
      if (stage_.after_backward) stage_.after_backward(a.chunk, unit(a, j), /*final=*/true);
    }
    slot.grad = torch::Tensor();
    if (s == 0) slots_.erase({a.chunk, a.microbatch});
  }

  void input_gradient(const Action& a, int s, Slot& slot) {
    slot.input_grads.assign(static_cast<size_t>(units_), torch::Tensor());
    for (int j = 0; j < units_; ++j) {
      before_backward(a, unit(a, j), backwards_left_);
      torch::Tensor& output = slot.outputs[static_cast<size_t>(j)];
      slot.input_grads[static_cast<size_t>(j)] =
          backward_input(output, s == last_stage_ ? torch::Tensor() : part(slot.grad, j),
                         slot.inputs[static_cast<size_t>(j)], &deferred_[{a.chunk, unit(a, j)}]);
      output = torch::Tensor();  // the graph lives on in `deferred_` until W
      if (stage_.after_backward) stage_.after_backward(a.chunk, unit(a, j), /*final=*/false);
    }
    slot.grad = torch::Tensor();
    if (s == 0) slots_.erase({a.chunk, a.microbatch});
  }

  void weight_gradients(const Action& a) {
    for (int j = 0; j < units_; ++j) {
      before_backward(a, unit(a, j), weights_left_);
      const auto it = deferred_.find({a.chunk, unit(a, j)});
      TRIAX_CHECK(it != deferred_.end(), "W of micro-batch ", a.microbatch, " before its I");
      const std::vector<torch::Tensor> params = backward_weight(&it->second);
      deferred_.erase(it);  // the unit's graph is freed here
      if (stage_.weights_ready) stage_.weights_ready(a.chunk, params);
      if (stage_.after_backward) stage_.after_backward(a.chunk, unit(a, j), /*final=*/true);
    }
  }

  void send_grad(const Action& a, int s, Slot& slot) {
    if (!fault_due("skip-send")) {  // a test's dropped message (Note [Fault injection])
      // From a split backward's I, else what B left in the inputs' .grad.
      std::vector<torch::Tensor> grads = slot.input_grads;
      if (grads.empty()) {
        for (const auto& input : slot.inputs) {
          // No gradient wanted upstream (frozen): zeros keep the schedule's messages.
          grads.push_back(input.grad().defined() ? input.grad() : torch::zeros_like(input));
        }
      }
      send(a, message_tag(s - 1, a.microbatch, schedule_.microbatches, true), joined(grads));
    }
    slots_.erase({a.chunk, a.microbatch});
  }

  Communicator& pp_;
  const std::vector<int64_t>& shape_;
  torch::ScalarType dtype_;
  const Schedule& schedule_;
  const StageFunctions& stage_;
  const int rank_;
  const int last_stage_;
  const int units_;     // per micro-batch (Note [Sample units])
  const double scale_;  // each unit's loss weight: 1/(m units)
  std::map<std::pair<int, int>, Slot> slots_;
  std::vector<std::pair<WorkPtr, torch::Tensor>> sends_;  // kept alive until the step ends
  double loss_sum_ = 0;
  std::vector<double> losses_;  // each unit's, on the last stage's rank
  int live_ = 0;
  int peak_live_ = 0;
  // Per chunk, the B (or I) and the W passes still to run in this step, in units.
  std::vector<int> backwards_left_;
  std::vector<int> weights_left_;
  std::map<std::pair<int, int>, DeferredWeights> deferred_;  // (chunk, unit): what I left for W
  std::map<int, torch::Tensor> local_;  // messages between two stages on this rank, by tag
};

}  // namespace

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
  StepRun step(pp_, shape_, dtype_, schedule, stage);
  trace_.clear();
  peak_bytes_ = 0;
  const int64_t heap_at_start = tracing_ ? heap_bytes_in_use() : 0;
  const auto begin = std::chrono::steady_clock::now();
  const auto now_us = [&] {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - begin)
        .count();
  };
  for (const Action& a : schedule.ranks[static_cast<size_t>(pp_.rank())]) {
    const double start = tracing_ ? now_us() : 0;
    step.run(a);
    if (tracing_) {
      trace_.push_back({a.kind, a.chunk, a.microbatch, start, now_us()});
      peak_bytes_ = std::max(peak_bytes_, heap_bytes_in_use() - heap_at_start);
    }
  }
  const double loss = step.finish(&losses_);
  peak_live_ = step.peak_live();
  return loss;
}

}  // namespace triax
