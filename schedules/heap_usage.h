// defines: triax::heap_bytes_in_use
//
// Bytes currently allocated from the C heap (glibc's mallinfo2: small blocks plus mmap'ed large
// ones). LibTorch's CPU tensors come from there, so differences of this figure measure how much
// activation memory a pipeline schedule holds. 0 where glibc's interface is missing.
#pragma once

#include <cstdint>

namespace triax {

int64_t heap_bytes_in_use();

}  // namespace triax
