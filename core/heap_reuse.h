// defines: triax::reuse_freed_heap, triax::return_freed_heap
//
// LibTorch's CPU tensors come from glibc's malloc, whose defaults suit programs that allocate
// once: a block above its mmap threshold (128 KiB at first, raised as such blocks are freed) gets
// fresh pages from the kernel, and the top of the heap is given back once more than the trim
// threshold is free. A training step frees and re-allocates the same activations every step, so
// under those defaults it page-faults them in again each time: 17% of the small Llama's step
// (tools/bench/llama_vs_pytorch.sh: 38.2 -> 32.7 ms per step, one process).
// Fixing both thresholds keeps freed blocks for the next step: blocks up to 32 MiB (the largest
// threshold glibc accepts) come from the heap, and up to 1 GiB of free heap is kept rather than
// returned. Larger tensors are still mapped fresh (their page faults are small next to the
// compute that fills them). The cost: after a peak the resident set shrinks by less; the peak
// itself is unchanged (tools/bench/memory.sh).
// A user's own choice wins: nothing is changed when MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_ or a glibc.malloc tunable is set in the environment.
#pragma once

namespace triax {

/// Call first thing in main (before tensors are allocated). Returns whether it changed glibc's
/// thresholds (false: not glibc, or the environment chose them).
bool reuse_freed_heap();

/// The opposite, for one-off conversions that stream a large model through memory (import,
/// export, reshard): every block of 1 MiB or more is mapped on its own and unmapped when freed,
/// so the process holds only what it still uses (glibc's growing threshold would otherwise keep
/// freed tensors of up to 32 MiB in a fragmented heap: tools/bench/hf_import_memory.sh measured
/// 913 MiB instead of 577 for a 1.35 GB model). Same environment rule as above.
bool return_freed_heap();

}  // namespace triax
