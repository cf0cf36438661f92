#include "core/fault_point.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace triax {

void fault_point(const char* name, int64_t step) {
  const char* target = std::getenv("TRIAX_KILL_AT");
  if (target == nullptr || std::string(target) != std::string(name) + ":" + std::to_string(step)) {
    return;
  }
  std::fprintf(stderr, "fault point %s:%lld: killing this process (TRIAX_KILL_AT)\n", name,
               static_cast<long long>(step));
  std::fflush(stderr);
  std::raise(SIGKILL);
}

}  // namespace triax
