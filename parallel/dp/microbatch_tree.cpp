#include "parallel/dp/microbatch_tree.h"

#include <algorithm>

#include "core/error.h"

namespace triax {

namespace {

// Where the left-balanced tree splits [a, b): a + the largest power of two below b - a (>= 2).
int split_of(int a, int b) {
  int half = 1;
  while (2 * half < b - a) half *= 2;
  return a + half;
}

}  // namespace

MicrobatchTree::MicrobatchTree(int leaves) : leaves_(leaves) {
  TRIAX_CHECK(leaves >= 1, "MicrobatchTree: ", leaves, " leaves");
}

bool MicrobatchTree::is_node(int lo, int hi) const {
  int a = 0, b = leaves_;
  while (true) {
    if (lo == a && hi == b) return true;
    if (b - a < 2 || lo < a || hi > b) return false;
    const int s = split_of(a, b);
    if (hi <= s) {
      b = s;
    } else if (lo >= s) {
      a = s;
    } else {
      return false;
    }
  }
}

std::pair<int, int> MicrobatchTree::sibling(int lo, int hi) const {
  int a = 0, b = leaves_;
  while (true) {
    const int s = split_of(a, b);
    if (lo == a && hi == s) return {s, b};
    if (lo == s && hi == b) return {a, s};
    if (hi <= s) {
      b = s;
    } else {
      a = s;
    }
  }
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

bool MicrobatchTree::add(int lo, int hi, const std::vector<torch::Tensor>& node) {
  TRIAX_CHECK(is_node(lo, hi), "MicrobatchTree: [", lo, ", ", hi, ") is no node of the tree over ",
              leaves_, " micro-batches");
  TRIAX_CHECK(!waiting_.count({lo, hi}), "MicrobatchTree: node [", lo, ", ", hi, ") arrived twice");
  torch::NoGradGuard no_grad;
  while (!(lo == 0 && hi == leaves_)) {
    const auto [slo, shi] = sibling(lo, hi);
    const auto waiting = waiting_.find({slo, shi});
    if (waiting == waiting_.end()) break;
    // left + right: the operands commute exactly, so adding into either gives the node.
    at::_foreach_add_(node, waiting->second);
    spare_.push_back(std::move(waiting->second));
    waiting_.erase(waiting);
    lo = std::min(lo, slo);
    hi = std::max(hi, shi);
  }
  if (lo == 0 && hi == leaves_) return true;
  std::vector<torch::Tensor> copy = take_buffer(node);
  for (size_t k = 0; k < node.size(); ++k) copy[k].copy_(node[k]);
  waiting_[{lo, hi}] = std::move(copy);
  return false;
}

void MicrobatchTree::reset() {
  for (auto& node : waiting_) spare_.push_back(std::move(node.second));
  waiting_.clear();
}

}  // namespace triax
