// reuse_freed_heap sets glibc's thresholds unless the user chose them in the environment.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "core/heap_reuse.h"

using namespace triax;

namespace {

/// Sets `name` to `value` (nullptr: unsets it) for one scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace

TEST_CASE("freed heap is kept for reuse unless the environment chose malloc's thresholds",
          "[heap]") {
  ScopedEnv mmap_threshold("MALLOC_MMAP_THRESHOLD_", nullptr);
  ScopedEnv trim_threshold("MALLOC_TRIM_THRESHOLD_", nullptr);
  {
    ScopedEnv tunables("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=131072");
    CHECK_FALSE(reuse_freed_heap());
    CHECK_FALSE(return_freed_heap());
  }
  {
    ScopedEnv user("MALLOC_MMAP_THRESHOLD_", "131072");
    CHECK_FALSE(reuse_freed_heap());
  }
#if defined(__GLIBC__)
  ScopedEnv tunables("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=512");  // not malloc's
  CHECK(return_freed_heap());
  CHECK(reuse_freed_heap());
#endif
}
