#include "parallel/cp/exchange_wait.h"

#include <chrono>

namespace triax {
namespace {

// Attention runs on the thread that drives the model: one counter for the process.
double g_waited = 0;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

double exchange_wait_seconds() {
  return g_waited;
}

ExchangeWait::ExchangeWait() : start_(now()) {}

ExchangeWait::~ExchangeWait() {
  g_waited += now() - start_;
}

}  // namespace triax
