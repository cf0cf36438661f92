// defines: triax::DeferredWeights, triax::backward_input, triax::backward_weight
//
// Split backward (Note [Split backward]): the zero-bubble schedules run a micro-batch's backward
// as two actions. I (backward_input) computes the gradient of the stage's input — the critical
// path to the previous stage — and leaves, for each operation that consumes a parameter, the
// gradient of that operation's output; W (backward_weight), later, turns those into parameter
// gradients. Together they give the bits the one-piece backward gives.
//
// Note [Split backward]: no layer is rewritten. After the forward, the autograd graph is walked:
// a *weight chain* node has exactly one next edge, leading to a parameter's accumulator or to
// another weight chain node (t(), view, the bf16 cast of a weight, an embedding's backward); a
// *frontier* node is any other node with an edge into a weight chain or a parameter (addmm,
// layer norm, the bias add, a custom Function's backward). I runs the engine from the stage's
// output with, as its only outputs, the input's gradient and each frontier node's incoming
// gradients: the engine then computes for every node only the edges leading there (ATen's
// backward formulas skip a masked weight gradient), and never touches a parameter; then it cuts
// each frontier node's edges to the input side, so the rest of the graph and what it saved are
// freed with the stage's output. W runs all frontier nodes at once from their captured
// gradients, with the parameters' accumulators as the outputs: each node computes only its
// weight edges, the chains run to the accumulators, contributions to one parameter meet in its
// accumulator's input buffer as in the one-piece backward, and the sums are added to .grad as
// the accumulator would add them.
// From I until W a micro-batch holds what W needs: each frontier node's saved inputs (a linear's
// input activation) and its captured output gradient.
// Parameters used inside an activation-checkpointed block are invisible to the walk (the block
// is one opaque node that re-runs its own backward): their gradients are computed in I, by
// that node, through the accumulators (and their hooks) as before.
#pragma once

#include <torch/csrc/autograd/edge.h>
#include <torch/torch.h>

#include <vector>

namespace triax {

/// What I leaves for W: per frontier node, its incoming gradients and the parameters it reaches.
struct DeferredWeights {
  struct Frontier {
    std::vector<torch::autograd::Edge> roots;    ///< (node, i) for each of its inputs
    std::vector<torch::Tensor> grads;            ///< captured by I, one per root
    std::vector<torch::autograd::Edge> entries;  ///< its edges into weight chains (or params)
    std::vector<torch::autograd::Edge> params;   ///< the accumulator each entry ends at
  };
  std::vector<Frontier> frontiers;
  bool empty() const { return frontiers.empty(); }
};

/// I: backpropagates `grad_output` (undefined: ones, for a scalar loss) from `output` and
/// returns the gradient of `input` (undefined when `input` is undefined or not a leaf that
/// requires grad). No parameter gradient is computed except inside checkpointed blocks.
torch::Tensor backward_input(const torch::Tensor& output, const torch::Tensor& grad_output,
                             const torch::Tensor& input, DeferredWeights* deferred);

/// W: computes the deferred parameter gradients, adds them to each parameter's .grad, and
/// returns the parameters that received one (for data-parallel readiness). Empties `deferred`.
std::vector<torch::Tensor> backward_weight(DeferredWeights* deferred);

}  // namespace triax
