// defines: triax::test::check_gradients_match
//
// Compares every parameter gradient of a (possibly tp-sharded, possibly partial) model with the
// gradient of the same-named parameter of the unsharded reference: replicated parameters in
// full, sharded ones against this rank's shard_of() the reference gradient.
#pragma once

#include "parallel/tp/shard_spec.h"
#include "support/tolerance.h"

namespace triax::test {

/// Returns how many parameters were compared.
inline int check_gradients_match(const torch::nn::Module& model, const torch::nn::Module& reference,
                                 int tp_rank, int tp_size) {
  const auto specs = collect_shard_specs(model);
  const auto expected = reference.named_parameters();
  int compared = 0;
  for (const auto& item : model.named_parameters()) {
    INFO("parameter " << item.key());
    const torch::Tensor* full = expected.find(item.key());
    REQUIRE(full != nullptr);
    REQUIRE(item.value().grad().defined());
    const auto spec = specs.find(item.key());
    TRIAX_CHECK_CLOSE(item.value().grad(),
                      spec == specs.end() ? full->grad()
                                          : shard_of(full->grad(), spec->second, tp_rank, tp_size));
    ++compared;
  }
  return compared;
}

}  // namespace triax::test
