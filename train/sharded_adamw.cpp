#include "train/sharded_adamw.h"

#include <cmath>

#include "core/error.h"
#include "parallel/dp/grad_norm.h"
#include "train/fused_adamw.h"

namespace triax {

ShardedAdamW::ShardedAdamW(const std::vector<DistributedDataParallel*>& ddps,
                           const std::vector<size_t>& first_index,
                           const std::vector<torch::Tensor>& params,
                           const std::vector<bool>& counted, const TrainConfig& train,
                           Communicator& dp, Communicator& model_parallel)
    : params_(params), train_(train), dp_(dp), model_parallel_(model_parallel), lr_(train.lr) {
  TRIAX_CHECK(ddps.size() == first_index.size(), "ShardedAdamW: one first index per DDP");
  for (size_t d = 0; d < ddps.size(); ++d) {
    for (int b = 0; b < ddps[d]->num_buckets(); ++b) {
      Part part;
      part.view = ddps[d]->bucket_view(b);
      TRIAX_CHECK(part.view.params.defined(), "ShardedAdamW needs DDP in shard mode");
      const int64_t begin = part.view.shard_begin;
      const int64_t end = begin + part.view.shard_size;
      part.exp_avg = torch::zeros({part.view.shard_size}, part.view.params.options());
      part.exp_avg_sq = torch::zeros({part.view.shard_size}, part.view.params.options());
      for (const auto& member : part.view.members) {
        part.indices.push_back(first_index[d] + member.index);
        const int64_t lo = std::max(begin, member.offset);
        const int64_t hi = std::min(end, member.offset + member.numel);
        if (lo >= hi) continue;
        const size_t index = first_index[d] + member.index;
        // Weight decay on matrices only, as make_optimizer's groups (train/optimizer.h).
        part.segments.push_back({lo - begin, hi - begin, index, lo - member.offset,
                                 params_.at(index).dim() >= 2, counted.at(index)});
      }
      parts_.push_back(std::move(part));
    }
  }
}

double ShardedAdamW::clip_and_step(double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> counted;
  for (const Part& part : parts_) {
    for (const Segment& s : part.segments) {
      if (s.counted) counted.push_back(part.view.grad_shard.narrow(0, s.begin, s.end - s.begin));
    }
  }
  torch::Tensor squares = sum_of_squares(counted);
  dp_.all_reduce(squares, ReduceOp::kSum);  // the slices of one replica
  model_parallel_.all_reduce(squares, ReduceOp::kSum);
  const double norm = std::sqrt(squares.item<double>());
  if (max_norm > 0 && norm > max_norm) {
    for (Part& part : parts_) part.view.grad_shard.mul_(max_norm / (norm + 1e-6));
  }

  ++step_;
  torch::optim::AdamWOptions options(lr_);
  options.betas({train_.beta1, train_.beta2}).eps(train_.eps).weight_decay(train_.weight_decay);
  const AdamWCoefficients decayed = adamw_coefficients(options, step_);
  const AdamWCoefficients plain = adamw_coefficients(options.weight_decay(0.0), step_);
  std::vector<WorkPtr> gathers;
  for (Part& part : parts_) {
    float* p = part.view.params.data_ptr<float>() + part.view.shard_begin;
    float* g = part.view.grad_shard.data_ptr<float>();
    float* m = part.exp_avg.data_ptr<float>();
    float* v = part.exp_avg_sq.data_ptr<float>();
    for (const Segment& s : part.segments) {
      adamw_update(p + s.begin, g + s.begin, m + s.begin, v + s.begin, s.end - s.begin,
                   s.decays ? decayed : plain);
    }
    // Every replica gets every slice back. The input is a copy: MPI's buffers must not overlap.
    const torch::Tensor mine =
        part.view.params.narrow(0, part.view.shard_begin, part.view.shard_size).clone();
    gathers.push_back(dp_.all_gather_async(part.view.params, mine));
  }
  for (auto& work : gathers) work->wait();
  return norm;
}

void ShardedAdamW::export_state(torch::optim::Optimizer& full) const {
  full.state().clear();
  if (step_ == 0) return;  // before the first step there is no state, as LibTorch's
  for (const Part& part : parts_) {
    const torch::Tensor m = dp_.all_gather(part.exp_avg);
    const torch::Tensor v = dp_.all_gather(part.exp_avg_sq);
    for (size_t k = 0; k < part.view.members.size(); ++k) {
      const auto& member = part.view.members[k];
      const torch::Tensor& p = params_[part.indices[k]];
      auto state = std::make_unique<torch::optim::AdamWParamState>();
      state->step(step_);
      state->exp_avg(m.narrow(0, member.offset, member.numel).view(p.sizes()));
      state->exp_avg_sq(v.narrow(0, member.offset, member.numel).view(p.sizes()));
      full.state()[c10::guts::to_string(p.unsafeGetTensorImpl())] = std::move(state);
    }
  }
}

void ShardedAdamW::import_state(torch::optim::Optimizer& full) {
  torch::NoGradGuard no_grad;
  int64_t step = 0;
  for (Part& part : parts_) {
    for (const Segment& s : part.segments) {
      const auto it =
          full.state().find(c10::guts::to_string(params_[s.param].unsafeGetTensorImpl()));
      if (it == full.state().end()) continue;  // saved before the first step
      auto& state = static_cast<torch::optim::AdamWParamState&>(*it->second);
      const int64_t length = s.end - s.begin;
      part.exp_avg.narrow(0, s.begin, length)
          .copy_(state.exp_avg().reshape({-1}).narrow(0, s.param_offset, length));
      part.exp_avg_sq.narrow(0, s.begin, length)
          .copy_(state.exp_avg_sq().reshape({-1}).narrow(0, s.param_offset, length));
      step = state.step();
    }
  }
  // Ranks whose slices hold only padding saw no state: agree on the step.
  torch::Tensor steps = torch::tensor({step}, torch::kLong);
  dp_.all_reduce(steps, ReduceOp::kMax);
  step_ = steps.item<int64_t>();
  full.state().clear();
}

int64_t ShardedAdamW::state_bytes() const {
  int64_t bytes = 0;
  for (const Part& part : parts_) bytes += part.exp_avg.nbytes() + part.exp_avg_sq.nbytes();
  return bytes;
}

}  // namespace triax
