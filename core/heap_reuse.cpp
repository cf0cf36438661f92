#include "core/heap_reuse.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace triax {

namespace {

bool environment_chose() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
         std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr ||
         (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr);
}

}  // namespace

bool return_freed_heap() {
#if defined(__GLIBC__)
  if (environment_chose()) return false;
  return mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1;
#else
  return false;
#endif
}

bool reuse_freed_heap() {
#if defined(__GLIBC__)
  if (environment_chose()) return false;
  // Both, or neither: setting one turns off glibc's dynamic adjustment of the other, and a trim
  // threshold alone sends every block above 128 KiB to mmap (the step then takes twice as long).
  return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
#else
  return false;
#endif
}

}  // namespace triax
