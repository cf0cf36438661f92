#include "core/tensor_memory.h"

#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <mutex>

namespace triax {
namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<bool> g_installed{false};

// The base allocator's pointer plus the size, so the deleter can subtract it.
struct Counted {
  c10::DataPtr inner;
  int64_t bytes;
};

void release(void* context) {
  auto* counted = static_cast<Counted*>(context);
  g_live.fetch_sub(counted->bytes, std::memory_order_relaxed);
  delete counted;  // frees the data through the base allocator's deleter
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t bytes) const override {
    c10::DataPtr inner = base_->allocate(bytes);
    void* data = inner.get();
    const auto size = static_cast<int64_t>(bytes);
    const int64_t now = g_live.fetch_add(size, std::memory_order_relaxed) + size;
    int64_t seen = g_peak.load(std::memory_order_relaxed);
    while (now > seen && !g_peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
    return {data, new Counted{std::move(inner), size}, &release, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

 private:
  c10::Allocator* base_;
};

}  // namespace

void TensorMemory::install() {
  static std::once_flag once;
  std::call_once(once, [] {
    static CountingAllocator counting(c10::GetCPUAllocator());
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
