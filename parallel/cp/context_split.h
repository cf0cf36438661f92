// defines: triax::ContextSplit
//
// Which positions of every sequence a rank of a context-parallel group holds. Under a causal mask
// a position attends to every one before it, so a contiguous split would give the last of C ranks
// 2C - 1 times the first one's work. The sequence is instead cut into 2C chunks and rank r holds
// chunks r and 2C-1-r (head-tail, as Megatron's and torchtitan's load balancers do): each rank
// then computes the same number of query-key products. A rank's part is its two chunks back to
// back, in position order.
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <vector>

namespace triax {

class ContextSplit {
 public:
  /// `length` positions over `size` ranks: a multiple of 2 * size (ConfigError-free: the caller
  /// checked the configuration; a wrong length here is a bug and throws).
  ContextSplit(int64_t length, int rank, int size);

  int64_t length() const { return length_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Positions per chunk, and this rank's part: two chunks.
  int64_t chunk() const { return length_ / (2 * size_); }
  int64_t local_length() const { return 2 * chunk(); }
  /// The global chunks rank `rank` holds, in position order: {rank, 2 * size - 1 - rank}.
  std::array<int64_t, 2> chunks_of(int rank) const;
  std::array<int64_t, 2> chunks() const { return chunks_of(rank_); }
  /// The global positions of this rank's part, [local_length()] int64.
  torch::Tensor positions() const;
  /// This rank's part of a whole-sequence tensor (`dim` of size length()).
  torch::Tensor take(const torch::Tensor& whole, int64_t dim) const;
  /// The whole sequence from every rank's part (parts[r] is rank r's), along `dim`.
  torch::Tensor assemble(const std::vector<torch::Tensor>& parts, int64_t dim) const;
  /// Kept in an autograd context for a backward (contexts hold IValues), and read back.
  void save_to(torch::autograd::AutogradContext* ctx) const;
  static ContextSplit saved_in(torch::autograd::AutogradContext* ctx);

 private:
  int64_t length_;
  int rank_;
  int size_;
};

}  // namespace triax
