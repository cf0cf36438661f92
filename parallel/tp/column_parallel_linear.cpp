#include "parallel/tp/column_parallel_linear.h"

#include "core/bf16_matmul.h"
#include "core/error.h"
#include "parallel/tp/sequence_parallel.h"
#include "parallel/tp/tp_mappings.h"

namespace triax {

ColumnParallelLinearImpl::ColumnParallelLinearImpl(const ColumnParallelLinearOptions& options,
                                                   Communicator& tp)
    : options_(options), tp_(&tp) {
  TRIAX_CHECK(!options_.pad_to_tp() || options_.stride() == 1,
              "ColumnParallelLinear: padding is only defined for stride 1 (vocabulary heads)");
  const int64_t unit = tp.size() * options_.stride();
  const int64_t out = options_.out_features();
  TRIAX_CHECK(options_.pad_to_tp() || out % unit == 0, "ColumnParallelLinear: out_features ", out,
              " is not divisible by tp ", tp.size(), " x stride ", options_.stride());
  spec_ = ShardSpec{0, options_.stride(), out, (out + unit - 1) / unit * unit};
  torch::NoGradGuard no_grad;
  // In place: one full-size tensor at a time (a converter builds every stage of a large model).
  const torch::Tensor full = torch::randn({out, options_.in_features()}).mul_(options_.init_std());
  weight = register_parameter("weight", shard_of(full, spec_, tp.rank(), tp.size()));
  if (options_.bias()) {
    bias = register_parameter("bias", torch::zeros({spec_.padded_size / tp.size()}));
  }
}

torch::Tensor ColumnParallelLinearImpl::forward(const torch::Tensor& x) {
  // ATen's linear, not the C++ frontend's functional::linear: on a contiguous [b, s, in] input
  // it folds the bias into one addmm where the frontend's runs a matmul and a separate add.
  const torch::Tensor y = mixed_linear(copy_to_tp_region(x, *tp_), weight, bias);
  if (!options_.gather_output()) return y;
  torch::Tensor full = gather_from_tp_region(y, *tp_);
  if (options_.stride() > 1 && tp_->size() > 1) {
    // Gathered as [rank0: block0..blockS-1, rank1: ...]; the full order is block-major.
    std::vector<int64_t> shape = full.sizes().vec();
    shape.back() = tp_->size();
    shape.push_back(options_.stride());
    shape.push_back(-1);
    full = full.view(shape).transpose(-3, -2).flatten(-3);
  }
  // Padding columns exist only to make the split even; they are not part of the output.
  return spec_.padded_size > spec_.full_size ? full.narrow(-1, 0, spec_.full_size) : full;
}

torch::Tensor ColumnParallelLinearImpl::forward_gathered(const torch::Tensor& x) {
  TRIAX_CHECK(!options_.gather_output(), "forward_gathered is for layers that keep Y split");
  return gathered_linear(x, weight, bias, *tp_);
}

std::map<std::string, ShardSpec> ColumnParallelLinearImpl::shard_specs() const {
  std::map<std::string, ShardSpec> specs{{"weight", spec_}};
  if (bias.defined())
    specs["bias"] = ShardSpec{0, spec_.stride, spec_.full_size, spec_.padded_size};
  return specs;
}

}  // namespace triax
