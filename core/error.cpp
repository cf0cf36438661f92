#include "core/error.h"

namespace triax {

void throw_check_failure(const char* file, int line, const char* cond, const std::string& message) {
  throw Error(
      str(file, ":", line, ": check `", cond, "` failed", message.empty() ? "" : ": ", message));
}

}  // namespace triax
