#include "checkpoint/background_save.h"

#include "core/flight_recorder.h"
#include "core/log.h"
#include "core/strings.h"
#include "core/timing.h"

namespace triax {
namespace {

std::string seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", value);
  return text;
}

// The training thread goes on changing the parameters and the optimizer's state in place: the
// writer gets copies.
CheckpointContents snapshot(CheckpointContents contents) {
  for (auto& named : contents.tensors) {
    named.second = named.second.detach().clone(at::MemoryFormat::Contiguous);
  }
  return contents;
}

}  // namespace

BackgroundSave::BackgroundSave(ParallelContext& context, const Config& config)
    : context_(context), config_(config), async_(config.checkpoint.async) {}

BackgroundSave::~BackgroundSave() {
  // Unwinding after an error: the job is ending; let the writer finish its file (it holds the
  // snapshot) but complete nothing (that would need the other ranks).
  if (pending_ && pending_->record.valid()) pending_->record.wait();
}

std::string BackgroundSave::save(int64_t step, const CheckpointLayout& layout,
                                 const std::function<CheckpointContents()>& contents, bool wait) {
  if (pending_) {
    const SteadyClock::time_point start = SteadyClock::now();
    const int64_t previous = pending_->target.step;
    finish();
    log::info(str("checkpoint of step ", step, " is due while step ", previous,
                  "'s was still being written: waited ", seconds(seconds_since(start)),
                  " s for it (at most one save in flight)"));
  }
  if (!async_ || wait) return save_checkpoint(context_, config_, step, layout, contents);
  const SteadyClock::time_point start = SteadyClock::now();
  const flight::Label label(str("checkpoint of step ", step, ": snapshot"));
  Pending pending;
  pending.target = shard_target(context_, begin_checkpoint(context_, config_, step), step);
  pending.layout = layout;
  if (context_.replica().rank() == 0) {  // one writer per (tp, pp): dp and cp rank 0
    CheckpointContents copy = snapshot(contents());
    pending.record =
        std::async(std::launch::async, [target = pending.target, copy = std::move(copy)]() mutable {
          return write_checkpoint_shard(target, std::move(copy)).encode();
        });
  } else if (CheckpointContents mine = contents(); mine.stream) {
    // This rank's slices reach the writer from the same thread's stream (its copies, over the
    // save's own communicator: the caller's contents are built for a background save).
    pending.record = std::async(std::launch::async, [mine = std::move(mine)]() mutable {
      stream_checkpoint_shard(std::move(mine));
      return std::string();
    });
  } else {
    std::promise<std::string> none;
    none.set_value("");
    pending.record = none.get_future();
  }
  pending.snapshot_s = seconds_since(start);
  pending.started_at = start;
  pending_ = std::move(pending);
  return pending_->target.dir;
}

void BackgroundSave::poll() {
  if (!pending_) return;
  const bool done = pending_->record.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  const flight::Label label(
      str("checkpoint of step ", pending_->target.step, ": are writers done"));
  torch::Tensor all_done = torch::tensor({done ? 1.0 : 0.0}, torch::kDouble);
  context_.world().all_reduce(all_done, ReduceOp::kMin);
  if (all_done.item<double>() > 0) complete();
}

void BackgroundSave::finish() {
  if (!pending_) return;
  pending_->record.wait();
  complete();
}

void BackgroundSave::complete() {
  Pending pending = std::move(*pending_);
  pending_.reset();
  // A writer's error (a full disk) surfaces here, on its rank, as a synchronous save's would.
  const std::string mine = pending.record.get();
  const flight::Label label(str("checkpoint of step ", pending.target.step, ": manifest"));
  const SteadyClock::time_point start = SteadyClock::now();
  complete_checkpoint(context_, config_, pending.target, pending.layout, mine);
  log::info(str("checkpoint of step ", pending.target.step, " saved to ", pending.target.dir,
                " in ", seconds(seconds_since(pending.started_at)),
                " s, in the background (training ", "paused ", seconds(pending.snapshot_s),
                " s for the snapshot and ", seconds(seconds_since(start)), " s for the manifest)"));
}

}  // namespace triax
