#include "parallel/tp/row_parallel_linear.h"

#include "core/bf16_matmul.h"
#include "core/error.h"
#include "parallel/tp/sequence_parallel.h"
#include "parallel/tp/tp_mappings.h"

namespace triax {

RowParallelLinearImpl::RowParallelLinearImpl(const RowParallelLinearOptions& options,
                                             Communicator& tp)
    : options_(options), tp_(&tp) {
  TRIAX_CHECK(options_.in_features() % tp.size() == 0, "RowParallelLinear: in_features ",
              options_.in_features(), " is not divisible by tp ", tp.size());
  torch::NoGradGuard no_grad;
  const torch::Tensor full =
      torch::randn({options_.out_features(), options_.in_features()}).mul_(options_.init_std());
  // A copy, not a view of `full`: a view would keep all of `full` alive through its base (at
  // tp = 1 the slice is the whole tensor), e.g. after a sharded optimizer moves the weight.
  weight = register_parameter(
      "weight", split_last_dim(full, tp.rank(), tp.size()).clone(at::MemoryFormat::Contiguous));
  if (options_.bias()) bias = register_parameter("bias", torch::zeros({options_.out_features()}));
}

torch::Tensor RowParallelLinearImpl::forward(const torch::Tensor& x) {
  const torch::Tensor input = options_.input_is_parallel() ? x : scatter_to_tp_region(x, *tp_);
  // One rank holds the whole sum: the bias goes into the matmul (addmm), as an ordinary linear.
  if (tp_->size() == 1) return mixed_linear(input, weight, bias);
  const torch::Tensor y = reduce_from_tp_region(mixed_linear(input, weight), *tp_);
  return bias.defined() ? y + convert_precision(bias, torch::kFloat) : y;  // bf16 weights: widened
}

torch::Tensor RowParallelLinearImpl::forward_scattered(const torch::Tensor& x) {
  TRIAX_CHECK(options_.input_is_parallel(), "forward_scattered needs a column-split input");
  const torch::Tensor y = reduce_scatter_sequence(mixed_linear(x, weight), *tp_);
  return bias.defined() ? y + convert_precision(bias, torch::kFloat) : y;
}

std::map<std::string, ShardSpec> RowParallelLinearImpl::shard_specs() const {
  const int64_t in = options_.in_features();
  return {{"weight", ShardSpec{1, 1, in, in}}};
}

}  // namespace triax
