#include "parallel/dp/microbatch_tree.h"

#include "core/error.h"

namespace triax {

MicrobatchTree::MicrobatchTree(int leaves) : leaves_(leaves) {
  TRIAX_CHECK(leaves >= 1 && (leaves & (leaves - 1)) == 0,
              "MicrobatchTree: the leaves must be a power of two, not ", leaves);
  while ((1 << levels_) < leaves) ++levels_;
}

std::vector<torch::Tensor> MicrobatchTree::take_buffer(const std::vector<torch::Tensor>& like) {
  if (!spare_.empty()) {
    std::vector<torch::Tensor> buffer = std::move(spare_.back());
    spare_.pop_back();
    return buffer;
  }
  std::vector<torch::Tensor> buffer;
  for (const auto& t : like) buffer.push_back(torch::empty_like(t));
  return buffer;
}

bool MicrobatchTree::add(int level, int index, const std::vector<torch::Tensor>& node) {
  TRIAX_CHECK(level >= 0 && level <= levels_ && index >= 0 && index < (leaves_ >> level),
              "MicrobatchTree: no node (", level, ", ", index, ") in a tree of ", leaves_,
              " leaves");
  TRIAX_CHECK(!waiting_.count({level, index}), "MicrobatchTree: node (", level, ", ", index,
              ") arrived twice");
  torch::NoGradGuard no_grad;
  while (level < levels_) {
    const auto sibling = waiting_.find({level, index ^ 1});
    if (sibling == waiting_.end()) break;
    // left + right: the operands commute exactly, so adding into either gives the node.
    at::_foreach_add_(node, sibling->second);
    spare_.push_back(std::move(sibling->second));
    waiting_.erase(sibling);
    ++level;
    index /= 2;
  }
  if (level == levels_) return true;
  std::vector<torch::Tensor> copy = take_buffer(node);
  for (size_t k = 0; k < node.size(); ++k) copy[k].copy_(node[k]);
  waiting_[{level, index}] = std::move(copy);
  return false;
}

void MicrobatchTree::reset() {
  for (auto& node : waiting_) spare_.push_back(std::move(node.second));
  waiting_.clear();
}

}  // namespace triax
