#include "parallel/comm/polled_work.h"

#include <sched.h>

#include <chrono>

#include "core/error.h"
#include "core/flight_recorder.h"

namespace triax {

PolledWork::PolledWork(std::unique_ptr<Completion> completion, uint64_t flight_id,
                       std::function<void()> finish, std::vector<torch::Tensor> keep_alive)
    : completion_(std::move(completion)),
      flight_id_(flight_id),
      finish_(std::move(finish)),
      keep_alive_(std::move(keep_alive)) {}

PolledWork::~PolledWork() {
  if (done_ || flight::abandoning() || !completion_->must_finish()) return;
  try {
    wait();
  } catch (...) {
  }
}

std::string PolledWork::operation() const {
  return flight_id_ != 0 ? flight::describe(flight_id_) : std::string("an operation");
}

void PolledWork::fail(const std::exception& e) {
  const std::string what = e.what();
  const std::string first_line = what.substr(0, what.find('\n'));
  if (completion_->is_timeout(e)) {
    flight::set_abandoning();
    completion_->abort();
    throw TimeoutError(
        str("waited more than comm.timeout_s = ", static_cast<int>(Communicator::timeout()),
            " s for ", operation(), " (", completion_->library(),
            completion_->library().empty() ? "" : ": ", first_line, ")"));
  }
  throw Error(str(operation(), " failed: ", first_line, completion_->failure_hint()));
}

bool PolledWork::test() {
  bool done = false;
  try {
    done = completion_->test();
  } catch (const Error&) {
    throw;  // ours (TRIAX_MPI_CHECK, TimeoutError) already names what failed
  } catch (const std::exception& e) {
    fail(e);
  }
  if (done) complete();
  return done;
}

void PolledWork::complete() {
  if (done_) return;
  done_ = true;
  if (flight_id_ != 0) flight::end(flight_id_);
  if (finish_) finish_();
  finish_ = nullptr;  // releases what it captured
  keep_alive_.clear();
}

bool PolledWork::is_completed() {
  return done_ || test();
}

void PolledWork::wait() {
  if (done_) return;
  RECORD_USER_SCOPE("triax::communication wait");
  if (completion_->blocks()) {
    try {
      completion_->block();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail(e);
    }
    complete();
    return;
  }
  if (test()) return;
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const auto limit = std::chrono::duration<double>(Communicator::timeout());
  while (!test()) {
    sched_yield();
    flight::poll_dump_request();
    const std::chrono::duration<double> waited = Clock::now() - start;
    if (waited > limit) {
      flight::set_abandoning();
      completion_->abort();
      throw TimeoutError(str("waited ", static_cast<int>(waited.count()), " s (comm.timeout_s = ",
                             static_cast<int>(limit.count()), ") for ", operation()));
    }
  }
}

}  // namespace triax
