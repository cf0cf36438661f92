#include "models/rotary.h"

#include <cmath>

#include "models/transformer.h"

namespace triax {
namespace {

// [-x2, x1] for x = [x1, x2] split in halves along the last dimension (Hugging Face's layout).
torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

torch::Tensor rope_inverse_frequencies(const TransformerOptions& o, int64_t head_dim) {
  const torch::Tensor i = torch::arange(0, head_dim, 2, torch::kDouble);
  torch::Tensor freq = torch::pow(o.rope_theta, -i / static_cast<double>(head_dim));
  if (o.rope_scaling_factor > 0) {
    const double original = static_cast<double>(o.rope_original_max_positions);
    const double low_wavelen = original / o.rope_low_freq_factor;
    const double high_wavelen = original / o.rope_high_freq_factor;
    const torch::Tensor wavelen = 2 * M_PI / freq;
    const torch::Tensor smooth = (original / wavelen - o.rope_low_freq_factor) /
                                 (o.rope_high_freq_factor - o.rope_low_freq_factor);
    const torch::Tensor mixed = (1 - smooth) * freq / o.rope_scaling_factor + smooth * freq;
    freq = torch::where(wavelen > low_wavelen, freq / o.rope_scaling_factor,
                        torch::where(wavelen < high_wavelen, freq, mixed));
  }
  return freq.to(torch::kFloat);
}

RotaryTables rotary_tables(const TransformerOptions& options, int64_t head_dim) {
  // angle(position, i) = position * inv_freq[i], both halves alike.
  const torch::Tensor positions = torch::arange(options.seq_len, torch::kFloat);
  const torch::Tensor angles = torch::outer(positions, rope_inverse_frequencies(options, head_dim));
  const torch::Tensor both = torch::cat({angles, angles}, -1);
  return {both.cos(), both.sin()};
}

torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  return x * cos + rotate_half(x) * sin;
}

}  // namespace triax
