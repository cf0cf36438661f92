#include "train/finalize_grads.h"

#include "parallel/grad_sums.h"

namespace triax {

double finalize_model_grads(ModelGrads& grads) {
  double waited = 0;
  for (GradientSync* sync : grads.syncs) {  // 1: reductions that ran during backward
    if (sync->reduces_in_finish()) continue;
    sync->finish();
    waited += sync->exposed_seconds();
  }
  if (grads.tp != nullptr) sum_sequence_partial_grads(grads.sequence_partial, *grads.tp);  // 2
  sum_tied_grads(grads.tied_copies, grads.embedding);                                      // 3
  for (GradientSync* sync : grads.syncs) {  // 4: reductions that start now (ZeRO-1)
    if (!sync->reduces_in_finish()) continue;
    sync->finish();
    waited += sync->exposed_seconds();
  }
  return waited;
}

}  // namespace triax
