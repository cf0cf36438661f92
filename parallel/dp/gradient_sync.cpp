#include "parallel/dp/gradient_sync.h"

#include <chrono>

#include "core/error.h"
#include "parallel/dp/distributed_data_parallel.h"

namespace triax {

PerParameterAverage::PerParameterAverage(
    std::vector<std::pair<std::string, torch::Tensor>> parameters, Communicator& dp)
    : dp_(dp) {
  for (auto& item : parameters) params_.push_back(item.second);
}

void PerParameterAverage::broadcast_parameters() {
  torch::NoGradGuard no_grad;
  std::vector<WorkPtr> pending;
  if (dp_.size() == 1) return;  // nothing to receive (nor GPU tensors for a host communicator)
  for (auto& parameter : params_) pending.push_back(dp_.broadcast_async(parameter, 0));
  for (auto& work : pending) work->wait();
}

void PerParameterAverage::zero_grad() {
  for (auto& parameter : params_) {
    if (parameter.grad().defined()) parameter.mutable_grad().zero_();
  }
}

void PerParameterAverage::finish() {
  const auto start = std::chrono::steady_clock::now();
  average_gradients(params_, dp_);
  exposed_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void average_gradients(const std::vector<torch::Tensor>& parameters, Communicator& dp) {
  if (dp.size() == 1) return;
  std::vector<WorkPtr> pending;
  pending.reserve(parameters.size());
  for (const auto& parameter : parameters) {
    torch::Tensor grad = parameter.mutable_grad();
    if (!grad.defined()) {
      parameter.mutable_grad() = torch::zeros_like(parameter);
      grad = parameter.mutable_grad();
    }
    pending.push_back(dp.all_reduce_async(grad, ReduceOp::kAvg));
  }
  for (auto& work : pending) work->wait();
}

std::unique_ptr<GradientSync> make_gradient_sync(
    std::vector<std::pair<std::string, torch::Tensor>> parameters, Communicator& dp,
    const DdpConfig& ddp, DdpOptions options) {
  TRIAX_CHECK(ddp.bucketed || !options.shard, "a sharded optimizer needs bucketed DDP");
  TRIAX_CHECK(ddp.bucketed || options.reduce_dtype == torch::kFloat,
              "ddp.reduce_dtype: bf16 needs ddp.bucketed: true");
  TRIAX_CHECK(ddp.bucketed || options.tree_leaves == 0,
              "train.numerics: layout_invariant needs ddp.bucketed: true");
  if (!ddp.bucketed) return std::make_unique<PerParameterAverage>(std::move(parameters), dp);
  options.bucket_mb = ddp.bucket_mb;
  options.allow_unused = ddp.allow_unused;
  return std::make_unique<DistributedDataParallel>(std::move(parameters), dp, std::move(options));
}

}  // namespace triax
