// defines: triax::autocast_enabled, triax::set_autocast_enabled, triax::autocast_dtype,
//          triax::set_autocast_dtype, triax::optimizer_state_key, triax::fused_causal_attention
//
// The LibTorch API differences between the two builds triax supports, in one place: Debian's
// CPU-only 1.13 (the default, CI) and a CUDA LibTorch 2.x (the GPU machine's PyTorch, docs/gpu.md).
// 2.4 replaced the per-device autocast functions (is_cpu_enabled, set_autocast_gpu_dtype, ...)
// with ones taking the device type, and later releases drop the old ones; 2.0 added
// scaled_dot_product_attention (the fused attention kernels); 2.3 made c10::Allocator::allocate
// non-const and added copy_data (core/tensor_memory.cpp's counting allocator, by
// TRIAX_TORCH_AT_LEAST). The CUDA stream difference is
// parallel/comm/torch_cuda_compat.h's (it needs CUDA's headers).
#pragma once

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/optim/optimizer.h>
#include <torch/version.h>

#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

/// This LibTorch is major.minor or later.
#define TRIAX_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||        \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace triax {

#if TRIAX_TORCH_AT_LEAST(2, 4)
inline bool autocast_enabled(at::DeviceType device) {
  return at::autocast::is_autocast_enabled(device);
}
inline void set_autocast_enabled(at::DeviceType device, bool on) {
  at::autocast::set_autocast_enabled(device, on);
}
inline at::ScalarType autocast_dtype(at::DeviceType device) {
  return at::autocast::get_autocast_dtype(device);
}
inline void set_autocast_dtype(at::DeviceType device, at::ScalarType dtype) {
  at::autocast::set_autocast_dtype(device, dtype);
}
#else
inline bool autocast_enabled(at::DeviceType device) {
  return device == at::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
inline void set_autocast_enabled(at::DeviceType device, bool on) {
  if (device == at::kCUDA) {
    at::autocast::set_enabled(on);
  } else {
    at::autocast::set_cpu_enabled(on);
  }
}
inline at::ScalarType autocast_dtype(at::DeviceType device) {
  return device == at::kCUDA ? at::autocast::get_autocast_gpu_dtype()
                             : at::autocast::get_autocast_cpu_dtype();
}
inline void set_autocast_dtype(at::DeviceType device, at::ScalarType dtype) {
  if (device == at::kCUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
}
#endif

/// The key LibTorch's optimizers file a parameter's state under: its TensorImpl's address, as
/// text in 1.13 (c10::guts::to_string, gone in 2.x, wrote it with operator<<), as the pointer
/// itself in 2.x.
inline auto optimizer_state_key(const at::Tensor& p) {
  using Key = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << p.unsafeGetTensorImpl();
    return text.str();
  } else {
    return static_cast<void*>(p.unsafeGetTensorImpl());
  }
}

/// softmax(q k^T / sqrt(d) + causal mask) v for q, k, v [batch, heads, s, d] by LibTorch's fused
/// attention kernels (flash or memory-efficient on CUDA, 2.0 on): neither the [s, s] scores nor
/// the probabilities are kept for backward. Undefined where this LibTorch has none (1.13).
inline at::Tensor fused_causal_attention(const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& v) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                          /*is_causal=*/true);
#else
  (void)q, (void)k, (void)v;
  return at::Tensor();
#endif
}

}  // namespace triax
