// defines: triax::TensorMemory
//
// Bytes held by CPU tensors, counted exactly: install() puts a counting allocator in front of
// LibTorch's CPU allocator, so every tensor allocated afterwards adds its size when allocated and
// subtracts it when freed. live() is what tensors hold now, peak() the most they held since the
// last reset_peak(). Unlike the resident set or the heap, this is only tensor data: the figure
// the memory formulas predict (docs/memory.md). Tensors allocated before install() are not
// counted, nor anything when LibTorch's allocator is not its default one (installed() says).
// Thread-safe; costs a locked table update per allocation and free, so benchmarks use it, not
// training.
#pragma once

#include <cstdint>

namespace triax {

struct TensorMemory {
  /// Installs the counting allocator (once per process; later calls do nothing).
  static void install();
  static bool installed();
  static int64_t live();
  static int64_t peak();
  /// Starts a new peak from what is live now.
  static void reset_peak();
};

}  // namespace triax
