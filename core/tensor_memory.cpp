#include "core/tensor_memory.h"

#include <c10/core/CPUAllocator.h>

#include "core/torch_compat.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace triax {
namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<bool> g_installed{false};

// LibTorch's raw_allocate needs the data pointer to be its own context, so the sizes live in a
// side table, and freeing goes through the base allocator's raw deleter.
std::mutex g_mutex;
std::unordered_map<void*, int64_t>& sizes() {
  static auto* table = new std::unordered_map<void*, int64_t>();  // outlives static tensors
  return *table;
}
c10::DeleterFnPtr g_base_delete = nullptr;

void release(void* data) {
  int64_t bytes = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    const auto it = sizes().find(data);
    if (it != sizes().end()) {
      bytes = it->second;
      sizes().erase(it);
    }
  }
  g_live.fetch_sub(bytes, std::memory_order_relaxed);
  g_base_delete(data);
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}

#if TRIAX_TORCH_AT_LEAST(2, 3)
  c10::DataPtr allocate(size_t bytes) override {
    return counted(bytes);
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t bytes) const override {
    return counted(bytes);
  }
#endif
  c10::DeleterFnPtr raw_deleter() const override {
    return &release;
  }

 private:
  c10::DataPtr counted(size_t bytes) const {
    c10::DataPtr inner = base_->allocate(bytes);
    void* data = inner.release_context();  // == inner.get() for the default CPU allocator
    const auto size = static_cast<int64_t>(bytes);
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      sizes()[data] = size;
    }
    const int64_t now = g_live.fetch_add(size, std::memory_order_relaxed) + size;
    int64_t seen = g_peak.load(std::memory_order_relaxed);
    while (now > seen && !g_peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
    return {data, data, &release, c10::Device(c10::kCPU)};
  }

  c10::Allocator* base_;
};

}  // namespace

void TensorMemory::install() {
  static std::once_flag once;
  std::call_once(once, [] {
    c10::Allocator* base = c10::GetCPUAllocator();
    // Only an allocator whose pointers free themselves (LibTorch's default) can be wrapped so.
    g_base_delete = base->raw_deleter();
    if (g_base_delete == nullptr) return;
    static CountingAllocator counting(base);
    c10::SetCPUAllocator(&counting, /*priority=*/100);
    g_installed = true;
  });
}

bool TensorMemory::installed() {
  return g_installed;
}

int64_t TensorMemory::live() {
  return g_live.load(std::memory_order_relaxed);
}

int64_t TensorMemory::peak() {
  return g_peak.load(std::memory_order_relaxed);
}

void TensorMemory::reset_peak() {
  g_peak.store(g_live.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

}  // namespace triax
