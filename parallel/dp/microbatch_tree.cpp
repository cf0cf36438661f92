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

void MicrobatchTree::add(int index, const std::vector<torch::Tensor>& leaf) {
  TRIAX_CHECK(index >= 0 && index < leaves_, "MicrobatchTree: leaf ", index, " of ", leaves_);
  TRIAX_CHECK(!nodes_.count({0, index}) && !complete(), "MicrobatchTree: leaf ", index,
              " arrived twice");
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> sum = take_buffer(leaf);
  for (size_t k = 0; k < leaf.size(); ++k) sum[k].copy_(leaf[k]);
  int level = 0;
  while (level < levels_) {
    const auto sibling = nodes_.find({level, index ^ 1});
    if (sibling == nodes_.end()) break;
    // (left + right): the operands commute exactly, so adding into either gives the node.
    at::_foreach_add_(sum, sibling->second);
    spare_.push_back(std::move(sibling->second));
    nodes_.erase(sibling);
    ++level;
    index /= 2;
  }
  nodes_[{level, index}] = std::move(sum);
}

bool MicrobatchTree::complete() const {
  return nodes_.count({levels_, 0}) > 0;
}

const std::vector<torch::Tensor>& MicrobatchTree::root() const {
  const auto it = nodes_.find({levels_, 0});
  TRIAX_CHECK(it != nodes_.end(), "MicrobatchTree: the root before every leaf arrived");
  return it->second;
}

void MicrobatchTree::reset() {
  for (auto& node : nodes_) spare_.push_back(std::move(node.second));
  nodes_.clear();
}

}  // namespace triax
