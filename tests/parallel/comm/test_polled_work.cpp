// The one waiting policy (parallel/comm/polled_work.h, Note [Watchdog]) with a made-up backend:
// completion runs its steps once, the deadline throws TimeoutError naming the operation and
// aborts the backend, library errors are translated, and the abandon rule holds.
#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>

#include "core/error.h"
#include "core/flight_recorder.h"
#include "parallel/comm/polled_work.h"

using Catch::Contains;
using namespace triax;

namespace {

struct Log {
  int tests = 0, blocks = 0, aborts = 0;
};

// Done after `polls` tests (never when negative); throws `error` on test if set.
class FakeCompletion : public Completion {
 public:
  FakeCompletion(Log& log, int polls, bool blocking = false, std::string error = "",
                 bool finish = true)
      : log_(log), polls_(polls), blocking_(blocking), error_(std::move(error)), finish_(finish) {}
  bool test() override {
    ++log_.tests;
    if (!error_.empty()) throw std::runtime_error(error_ + "\nsecond line");
    return polls_ >= 0 && log_.tests >= polls_;
  }
  bool blocks() const override { return blocking_; }
  void block() override {
    ++log_.blocks;
    if (!error_.empty()) throw std::runtime_error(error_);
  }
  bool is_timeout(const std::exception& e) const override {
    return std::string(e.what()).find("timed out") != std::string::npos;
  }
  void abort() override { ++log_.aborts; }
  bool must_finish() const override { return finish_; }
  std::string library() const override { return "Fake"; }
  std::string failure_hint() const override { return " (hint)"; }

 private:
  Log& log_;
  int polls_;
  bool blocking_;
  std::string error_;
  bool finish_;
};

// The message of the TimeoutError `wait` throws ("" if it throws none or another error).
template <typename F>
std::string timeout_message(F&& wait) {
  try {
    wait();
  } catch (const TimeoutError& e) {
    return e.what();
  } catch (...) {
  }
  return "";
}

uint64_t record_recv() {
  flight::Event recv;
  recv.kind = "recv";
  recv.group = "pp [0,1]";
  recv.peer = 1;
  recv.bytes = 64;
  return flight::begin(recv);
}

}  // namespace

TEST_CASE("a polled work completes once: finish, flight end, keep-alives released",
          "[comm][watchdog]") {
  Log log;
  int finished = 0;
  torch::Tensor kept = torch::zeros({4});
  {
    PolledWork work(std::make_unique<FakeCompletion>(log, 3), record_recv(), [&] { ++finished; },
                    {kept});
    CHECK(kept.use_count() == 2);
    CHECK_FALSE(work.is_completed());
    work.wait();
    CHECK(work.is_completed());
    work.wait();
    CHECK(finished == 1);
    CHECK(kept.use_count() == 1);  // released on completion, not on destruction
  }
  CHECK(log.tests == 3);
}

TEST_CASE("the deadline throws TimeoutError naming the operation and aborts the backend",
          "[comm][watchdog]") {
  const double saved = Communicator::timeout();
  Communicator::set_timeout(0.2);
  Log log;
  {
    PolledWork work(std::make_unique<FakeCompletion>(log, -1), record_recv());
    CHECK_THAT(timeout_message([&] { work.wait(); }),
               Contains("(comm.timeout_s = 0) for recv from rank 1"));
    CHECK(log.aborts == 1);
    CHECK(flight::abandoning());
  }  // abandoning: the destructor does not wait for an operation that will never finish
  flight::clear_abandoning();
  Communicator::set_timeout(saved);
}

TEST_CASE("library errors are translated; a blocking library's timeout is a TimeoutError",
          "[comm][watchdog]") {
  Log log;
  PolledWork failed(std::make_unique<FakeCompletion>(log, -1, false, "connection reset", false),
                    record_recv());
  CHECK_THROWS_WITH(failed.wait(), Contains("recv from rank 1") &&
                                       Contains("failed: connection reset (hint)") &&
                                       !Contains("second line"));
  PolledWork blocked(std::make_unique<FakeCompletion>(log, -1, true, "operation timed out", false),
                     record_recv());
  CHECK_THAT(
      timeout_message([&] { blocked.wait(); }),
      Contains("waited more than comm.timeout_s") && Contains("(Fake: operation timed out)"));
  CHECK(log.blocks == 1);
  flight::clear_abandoning();
}

TEST_CASE("dropping an unfinished work waits for it when the library still owns its buffers",
          "[comm][watchdog]") {
  Log log;
  { PolledWork work(std::make_unique<FakeCompletion>(log, 5), 0); }
  CHECK(log.tests == 5);  // the destructor polled to completion
  Log other;
  { PolledWork work(std::make_unique<FakeCompletion>(other, 5, false, "", false), 0); }
  CHECK(other.tests == 0);  // a library that keeps its own references is not waited for
}
