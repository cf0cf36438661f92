// defines: triax::peak_rss_bytes
//
// The most physical memory this process has held (the kernel's VmHWM, "high water mark" of the
// resident set): on CPU the figure that decides whether a layout fits a node. 0 where /proc is
// missing.
#pragma once

#include <cstdint>

namespace triax {

int64_t peak_rss_bytes();

}  // namespace triax
