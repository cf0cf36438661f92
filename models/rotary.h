// defines: triax::rope_inverse_frequencies, triax::RotaryTables, triax::rotary_tables,
//          triax::rotate
//
// Rotary position embeddings (Su et al. 2021) in Hugging Face's layout: a head's features are
// two halves rotated pairwise, x * cos + rotate_half(x) * sin with rotate_half([x1, x2]) =
// [-x2, x1], at angles position * theta^(-2i/d), optionally with Llama 3.1's frequency scaling.
#pragma once

#include <torch/torch.h>

namespace triax {

struct TransformerOptions;

/// theta^(-2i/d) for i < d/2, with Llama 3.1's scaling when factor > 0: wavelengths longer than
/// original / low_freq_factor divided by factor, shorter than original / high_freq_factor kept,
/// and smoothly interpolated between.
torch::Tensor rope_inverse_frequencies(const TransformerOptions& options, int64_t head_dim);

/// cos and sin of every (position < seq_len, feature < head_dim) angle, both halves alike.
struct RotaryTables {
  torch::Tensor cos, sin;
};
RotaryTables rotary_tables(const TransformerOptions& options, int64_t head_dim);

/// x [.., s, head_dim] rotated by the tables' first s rows.
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

}  // namespace triax
