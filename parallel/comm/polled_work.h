// defines: triax::Completion, triax::PolledWork
//
// Note [Watchdog]: the one waiting policy of every communicator (c10d's Work shape: the base
// holds completion and the error, each backend answers "done?").
//  - Deadline: a wait longer than comm.timeout_s (Communicator::timeout()) throws TimeoutError
//    "waited N s (comm.timeout_s = T) for <the operation, as the flight recorder describes it>"
//    and marks the process as abandoning (flight::set_abandoning): the job is ending.
//  - Polling: backends that progress only inside their own calls (MPI, CUDA events) are tested
//    with sched_yield between tests (Note [Oversubscribed progress]: ranks may outnumber cores);
//    the clock is read on every spin (a spin can take milliseconds under load, or while MPI tries
//    to reach a dead peer), and each spin serves a pending SIGUSR2 flight-record dump.
//    Backends whose library waits well by itself (Gloo: a condition variable and its own
//    deadline, set to comm.timeout_s) block in it instead; its timeout error becomes the same
//    TimeoutError, any other error "<operation> failed: <library's message>".
//  - Completion, once: the flight recorder's entry ends, the backend's finish step runs (average,
//    copy back), and the tensors kept alive for the library are released.
//  - Abandon rule: destroying an unfinished work waits for it when the library may still write
//    into its buffers (Completion::must_finish), unless the job is abandoning after a timeout,
//    when it never will finish.
// The profiler shows the blocking part as "triax::communication wait" (core/op_profile.h).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {

/// What one backend supplies for one operation.
class Completion {
 public:
  virtual ~Completion() = default;
  /// Non-blocking: true once the operation is complete. May throw the library's error.
  virtual bool test() = 0;
  /// True for libraries that wait well by themselves: block() is then used instead of polling.
  virtual bool blocks() const { return false; }
  /// Waits in the library until completion, or throws its error (its own deadline included).
  virtual void block() {}
  /// Whether the library's error `e` (from test() or block()) is its deadline passing.
  virtual bool is_timeout(const std::exception& /*e*/) const { return false; }
  /// The deadline passed: release the library's hold on the operation (NCCL aborts its
  /// communicator).
  virtual void abort() {}
  /// Whether the library may still write into the operation's buffers after the work is
  /// dropped (MPI, NCCL: the abandon rule then waits; Gloo's work keeps its own references).
  virtual bool must_finish() const { return true; }
  /// The library's name, shown beside its own timeout message ("Gloo").
  virtual std::string library() const { return ""; }
  /// Appended to the message of a library error that is not a timeout.
  virtual std::string failure_hint() const { return ""; }
};

class PolledWork final : public Work {
 public:
  /// `flight_id`: the operation's flight-recorder entry (0: none). `finish` runs once on
  /// completion; `keep_alive` is released then.
  PolledWork(std::unique_ptr<Completion> completion, uint64_t flight_id,
             std::function<void()> finish = nullptr, std::vector<torch::Tensor> keep_alive = {});
  ~PolledWork() override;
  PolledWork(const PolledWork&) = delete;
  PolledWork& operator=(const PolledWork&) = delete;

  void wait() override;
  bool is_completed() override;

 private:
  /// Runs the completion steps once.
  void complete();
  /// test() with the library's errors translated.
  bool test();
  [[noreturn]] void fail(const std::exception& e);
  std::string operation() const;

  std::unique_ptr<Completion> completion_;
  uint64_t flight_id_;
  std::function<void()> finish_;
  std::vector<torch::Tensor> keep_alive_;
  bool done_ = false;
};

/// A work that is complete on creation (operations on a 1-rank group).
class DoneWork final : public Work {
 public:
  void wait() override {}
  bool is_completed() override { return true; }
};

}  // namespace triax
