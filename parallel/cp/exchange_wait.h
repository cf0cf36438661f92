// defines: triax::exchange_wait_seconds, triax::ExchangeWait
//
// What context parallelism's exchanges cost the step: the seconds ring attention waited for a
// kv block (or its gradient) still in transit after its compute, and all-to-all attention waited
// for its exchanges (which nothing overlaps). Benchmarks print the difference over a step
// (tools/bench/step_bench.cpp) as the exposed communication of attention.
#pragma once

namespace triax {

/// Seconds this process has waited on context-parallel exchanges so far.
double exchange_wait_seconds();

/// Adds the time from its construction to its destruction to exchange_wait_seconds().
class ExchangeWait {
 public:
  ExchangeWait();
  ~ExchangeWait();
  ExchangeWait(const ExchangeWait&) = delete;
  ExchangeWait& operator=(const ExchangeWait&) = delete;

 private:
  double start_;
};

}  // namespace triax
