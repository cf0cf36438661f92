#include "train/finalize_grads.h"

#include "core/error.h"
#include "parallel/grad_sums.h"

namespace triax {

namespace {

// ZeRO-2: each parameter's part of its sync's gradient slice.
std::vector<torch::Tensor> slices_of(const std::vector<torch::Tensor>& params,
                                     const std::vector<GradientSync*>& syncs) {
  std::vector<torch::Tensor> out;
  for (const auto& p : params) {
    torch::Tensor slice;
    for (GradientSync* sync : syncs) {
      slice = sync->gradient_shard(p);
      if (slice.defined()) break;
    }
    TRIAX_CHECK(slice.defined(), "finalize_model_grads: a parameter no gradient sync holds");
    out.push_back(slice);
  }
  return out;
}

}  // namespace

double finalize_model_grads(ModelGrads& grads) {
  double waited = 0;
  for (GradientSync* sync : grads.syncs) {  // 1: the dp reduction, started during backward
    sync->finish();
    waited += sync->exposed_seconds();
  }
  if (!grads.syncs.empty() && grads.syncs.front()->reduces_to_slices()) {
    // ZeRO-1 and ZeRO-2: the reduced gradient is this rank's slices; the sums over tp and the
    // embedding group act on them (the buckets are laid out so that they line up).
    if (grads.tp != nullptr) {
      sum_over_group(slices_of(grads.sequence_partial, grads.syncs), *grads.tp);  // 2
    }
    sum_tied_slices(slices_of(grads.tied_copies, grads.syncs), grads.embedding);  // 3
    return waited;
  }
  if (grads.tp != nullptr) sum_sequence_partial_grads(grads.sequence_partial, *grads.tp);  // 2
  sum_tied_grads(grads.tied_copies, grads.embedding);                                      // 3
  return waited;
}

}  // namespace triax
