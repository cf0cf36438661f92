#include "schedules/split_backward.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "core/error.h"

namespace triax {
namespace {

using torch::autograd::AccumulateGrad;
using torch::autograd::Edge;
using torch::autograd::Node;

// The walk of Note [Split backward] over one micro-batch's graph.
class GraphWalk {
 public:
  GraphWalk(const std::shared_ptr<Node>& root, const torch::Tensor& input)
      : input_(input.defined() ? input.unsafeGetTensorImpl() : nullptr) {
    std::vector<Node*> stack{root.get()};
    consumers_[root.get()] = 2;  // the root is never a chain node: someone must capture it
    nodes_.push_back(root);
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      for (const Edge& e : node->next_edges()) {
        if (!e.is_valid() || is_accumulator(e.function.get())) continue;
        if (consumers_[e.function.get()]++ == 0) {
          stack.push_back(e.function.get());
          nodes_.push_back(e.function);
        }
      }
    }
  }

  DeferredWeights frontiers() {
    DeferredWeights out;
    for (const auto& node : nodes_) {
      if (is_chain(node.get())) continue;
      DeferredWeights::Frontier f;
      for (const Edge& e : node->next_edges()) {
        const Edge end = chain_end(e);
        if (end.is_valid() && std::find(f.entries.begin(), f.entries.end(), e) == f.entries.end()) {
          f.entries.push_back(e);
          f.params.push_back(end);
        }
      }
      if (f.params.empty()) continue;
      for (uint32_t i = 0; i < node->num_inputs(); ++i) f.roots.emplace_back(node, i);
      out.frontiers.push_back(std::move(f));
    }
    return out;
  }

 private:
  bool is_accumulator(Node* node) const { return dynamic_cast<AccumulateGrad*>(node) != nullptr; }
  bool is_parameter(Node* node) const {
    auto* acc = dynamic_cast<AccumulateGrad*>(node);
    return acc != nullptr && acc->variable.unsafeGetTensorImpl() != input_;
  }
  static const Edge* single_edge(Node* node) {
    const Edge* only = nullptr;
    for (const Edge& e : node->next_edges()) {
      if (!e.is_valid()) continue;
      if (only != nullptr) return nullptr;
      only = &e;
    }
    return only;
  }
  // One consumer, one next edge, and that edge ends at a parameter.
  bool is_chain(Node* node) {
    const auto memo = chain_.find(node);
    if (memo != chain_.end()) return memo->second;
    const Edge* e = single_edge(node);
    const bool chain = consumers_[node] == 1 && e != nullptr &&
                       (is_parameter(e->function.get()) ||
                        (!is_accumulator(e->function.get()) && is_chain(e->function.get())));
    chain_[node] = chain;
    return chain;
  }
  // The parameter accumulator `e` leads to through weight chain nodes, or an invalid edge.
  Edge chain_end(const Edge& e) {
    if (!e.is_valid()) return Edge();
    Node* node = e.function.get();
    if (is_parameter(node)) return Edge(e.function, 0);
    if (is_accumulator(node) || !is_chain(node)) return Edge();
    return chain_end(*single_edge(node));
  }

  const c10::TensorImpl* input_;
  std::vector<std::shared_ptr<Node>> nodes_;
  std::unordered_map<Node*, int> consumers_;
  std::unordered_map<Node*, bool> chain_;
};

// Invalidates a frontier node's edges that do not enter a weight chain (Note [Split backward]).
void cut_input_side(const DeferredWeights::Frontier& f) {
  for (Edge& e : f.roots.front().function->next_edges()) {
    if (std::find(f.entries.begin(), f.entries.end(), e) == f.entries.end()) e = Edge();
  }
}

}  // namespace

torch::Tensor backward_input(const torch::Tensor& output, const torch::Tensor& grad_output,
                             const torch::Tensor& input, DeferredWeights* deferred) {
  TRIAX_CHECK(output.requires_grad() && output.grad_fn(), "backward_input: output has no graph");
  const bool want_input = input.defined() && input.requires_grad() && input.is_leaf();
  *deferred = GraphWalk(output.grad_fn(), want_input ? input : torch::Tensor()).frontiers();
  torch::autograd::edge_list outputs;
  if (want_input) outputs.push_back(torch::autograd::impl::gradient_edge(input));
  for (const auto& f : deferred->frontiers) {
    outputs.insert(outputs.end(), f.roots.begin(), f.roots.end());
  }
  if (outputs.empty()) return torch::Tensor();
  const torch::Tensor grad = grad_output.defined() ? grad_output : torch::ones_like(output);
  // Kept: W runs the frontier nodes again, from the gradients captured here.
  const torch::autograd::variable_list captured =
      torch::autograd::Engine::get_default_engine().execute(
          {torch::autograd::impl::gradient_edge(output)}, {grad}, /*keep_graph=*/true,
          /*create_graph=*/false, /*accumulate_grad=*/false, outputs);
  size_t k = want_input ? 1 : 0;
  for (auto& f : deferred->frontiers) {
    for (size_t i = 0; i < f.roots.size(); ++i) f.grads.push_back(captured[k++]);
    // The input side was this pass's work: cutting it now lets the rest of the graph, and the
    // activations it saved (attention's, the activation functions'), go as soon as the stage's
    // output is released, so between I and W a micro-batch holds only what W needs.
    cut_input_side(f);
  }
  return want_input ? captured[0] : torch::Tensor();
}

std::vector<torch::Tensor> backward_weight(DeferredWeights* deferred) {
  if (deferred->empty()) return {};
  // I cut each frontier node's edges to the input side (with tied weights they would lead to
  // the same parameter again), which leaves the engine only the frontier nodes, their weight
  // chains and the accumulators to visit — one engine run for the whole micro-batch. A node
  // computes only the outputs whose edges are valid (ATen's formulas and custom Functions ask),
  // so no input gradient is recomputed. Contributions to one parameter meet in its accumulator's
  // input buffer, as in the one-piece backward, and are captured there instead of accumulated.
  std::vector<Edge> roots;
  std::vector<torch::Tensor> grads;
  std::vector<Edge> accumulators;
  for (auto& f : deferred->frontiers) {
    roots.insert(roots.end(), f.roots.begin(), f.roots.end());
    grads.insert(grads.end(), f.grads.begin(), f.grads.end());
    for (const Edge& acc : f.params) {
      if (std::find(accumulators.begin(), accumulators.end(), acc) == accumulators.end()) {
        accumulators.push_back(acc);
      }
    }
  }
  const torch::autograd::variable_list sums = torch::autograd::Engine::get_default_engine().execute(
      roots, grads, /*keep_graph=*/false, /*create_graph=*/false, /*accumulate_grad=*/false,
      accumulators);
  deferred->frontiers.clear();  // the micro-batch's graph goes with it
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> params;
  for (size_t k = 0; k < accumulators.size(); ++k) {
    if (!sums[k].defined()) continue;
    torch::Tensor variable = static_cast<AccumulateGrad*>(accumulators[k].function.get())->variable;
    torch::Tensor& grad = variable.mutable_grad();
    if (grad.defined()) {
      grad.add_(sums[k]);  // what the accumulator does with an existing gradient
    } else {
      grad = sums[k].detach();
    }
    params.push_back(variable);
  }
  return params;
}

}  // namespace triax
