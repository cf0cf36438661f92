#include "parallel/cp/context_split.h"

#include "core/error.h"

namespace triax {

ContextSplit::ContextSplit(int64_t length, int rank, int size)
    : length_(length), rank_(rank), size_(size) {
  TRIAX_CHECK(size >= 1 && rank >= 0 && rank < size, "context split: rank ", rank, " of ", size);
  TRIAX_CHECK(length > 0 && length % (2 * size) == 0, "context split: a length of ", length,
              " positions is not a multiple of 2 x ", size, " chunks");
}

std::array<int64_t, 2> ContextSplit::chunks_of(int rank) const {
  return {rank, 2 * static_cast<int64_t>(size_) - 1 - rank};
}

torch::Tensor ContextSplit::positions() const {
  const int64_t c = chunk();
  const auto [first, second] = chunks();
  return torch::cat({torch::arange(first * c, (first + 1) * c, torch::kLong),
                     torch::arange(second * c, (second + 1) * c, torch::kLong)});
}

torch::Tensor ContextSplit::take(const torch::Tensor& whole, int64_t dim) const {
  TRIAX_CHECK(whole.size(dim) == length_, "context split: dim ", dim, " has ", whole.size(dim),
              " positions, not ", length_);
  const int64_t c = chunk();
  const auto [first, second] = chunks();
  return torch::cat({whole.narrow(dim, first * c, c), whole.narrow(dim, second * c, c)}, dim);
}

torch::Tensor ContextSplit::assemble(const std::vector<torch::Tensor>& parts, int64_t dim) const {
  TRIAX_CHECK(parts.size() == static_cast<size_t>(size_), "context split: ", parts.size(),
              " parts for ", size_, " ranks");
  const int64_t c = chunk();
  std::vector<torch::Tensor> chunks(2 * static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    const auto [first, second] = chunks_of(r);
    chunks[static_cast<size_t>(first)] = parts[static_cast<size_t>(r)].narrow(dim, 0, c);
    chunks[static_cast<size_t>(second)] = parts[static_cast<size_t>(r)].narrow(dim, c, c);
  }
  return torch::cat(chunks, dim);
}

void ContextSplit::save_to(torch::autograd::AutogradContext* ctx) const {
  ctx->saved_data["context_length"] = length_;
  ctx->saved_data["context_rank"] = static_cast<int64_t>(rank_);
  ctx->saved_data["context_size"] = static_cast<int64_t>(size_);
}

ContextSplit ContextSplit::saved_in(torch::autograd::AutogradContext* ctx) {
  return ContextSplit(ctx->saved_data["context_length"].toInt(),
                      static_cast<int>(ctx->saved_data["context_rank"].toInt()),
                      static_cast<int>(ctx->saved_data["context_size"].toInt()));
}

}  // namespace triax
