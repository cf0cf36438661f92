#include "train/optim/sharded_adamw.h"

#include <cmath>

#include "checkpoint/state_name.h"
#include "core/error.h"
#include "parallel/dp/grad_norm.h"
#include "train/optim/fused_adamw.h"

namespace triax {
namespace {

// The slice of the working weights this rank updates: the lasting slice (ZeRO-3), or this rank's
// part of the whole flat parameters.
torch::Tensor working_slice(const DdpBucketView& view) {
  if (view.param_shard.defined()) return view.param_shard;
  return view.params.narrow(0, view.shard_begin, view.shard_size);
}

}  // namespace

ShardedAdamW::ShardedAdamW(const TrainConfig& train, std::vector<OptimizedParam> params,
                           const std::vector<GradientSync*>& syncs, Communicator& dp,
                           Communicator& model_parallel)
    : params_(std::move(params)),
      train_(train),
      dp_(dp),
      model_parallel_(model_parallel),
      lr_(train.lr) {
  size_t first = 0;
  for (GradientSync* sync : syncs) {
    const std::vector<DdpBucketView> views = sync->bucket_views();
    TRIAX_CHECK(!views.empty() || sync->parameter_count() == 0,
                "ShardedAdamW needs bucketed DDP in shard mode (optimizer.shard)");
    for (const DdpBucketView& view : views) {
      Part part;
      part.view = view;
      TRIAX_CHECK(part.view.params.defined(), "ShardedAdamW needs DDP in shard mode");
      const int64_t begin = part.view.shard_begin;
      const int64_t end = begin + part.view.shard_size;
      // The moments (and a master copy) in the gradients' dtype: fp32 whatever the weights'.
      const auto fp32 = part.view.grad_shard.options();
      part.exp_avg = torch::zeros({part.view.shard_size}, fp32);
      part.exp_avg_sq = torch::zeros({part.view.shard_size}, fp32);
      if (part.view.params.scalar_type() != fp32.dtype().toScalarType()) {
        part.master = working_slice(part.view).to(fp32.dtype().toScalarType());
      }
      for (const auto& member : part.view.members) {
        part.indices.push_back(first + member.index);
        const int64_t lo = std::max(begin, member.offset);
        const int64_t hi = std::min(end, member.offset + member.numel);
        if (lo >= hi) continue;
        const size_t index = first + member.index;
        // Weight decay on matrices only, as make_torch_optimizer's groups.
        part.segments.push_back({lo - begin, hi - begin, index, lo - member.offset,
                                 params_.at(index).tensor.dim() >= 2, params_.at(index).counted});
      }
      parts_.push_back(std::move(part));
    }
    first += sync->parameter_count();
  }
  TRIAX_CHECK(first == params_.size(), "ShardedAdamW: the syncs hold ", first,
              " parameters, the optimizer ", params_.size());
}

double ShardedAdamW::global_norm() {
  std::vector<torch::Tensor> counted;
  for (const Part& part : parts_) {
    for (const Segment& s : part.segments) {
      if (s.counted) counted.push_back(part.view.grad_shard.narrow(0, s.begin, s.end - s.begin));
    }
  }
  torch::Tensor squares = sum_of_squares(counted);
  dp_.all_reduce(squares, ReduceOp::kSum);  // the slices of one replica
  model_parallel_.all_reduce(squares, ReduceOp::kSum);
  return std::sqrt(squares.item<double>());
}

double ShardedAdamW::step(double max_norm) {
  torch::NoGradGuard no_grad;
  const double norm = norm_source_ ? norm_source_() : global_norm();
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
    // ZeRO-3 updates the lasting slice; the next forward gathers it. bf16 working weights: the
    // master, rounded into the working slice after.
    const bool sliced = part.view.param_shard.defined();
    float* p = part.master.defined() ? part.master.data_ptr<float>()
               : sliced              ? part.view.param_shard.data_ptr<float>()
                                     : part.view.params.data_ptr<float>() + part.view.shard_begin;
    float* g = part.view.grad_shard.data_ptr<float>();
    float* m = part.exp_avg.data_ptr<float>();
    float* v = part.exp_avg_sq.data_ptr<float>();
    for (const Segment& s : part.segments) {
      adamw_update(p + s.begin, g + s.begin, m + s.begin, v + s.begin, s.end - s.begin,
                   s.decays ? decayed : plain);
    }
    if (part.master.defined()) working_slice(part.view).copy_(part.master);  // round to nearest
    if (sliced) continue;
    // Every replica gets every slice back. The input is a copy: MPI's buffers must not overlap.
    const torch::Tensor mine =
        part.view.params.narrow(0, part.view.shard_begin, part.view.shard_size).clone();
    gathers.push_back(dp_.all_gather_async(part.view.params, mine));
  }
  for (auto& work : gathers) work->wait();
  return norm;
}

namespace {

std::string state_name(const std::string& param, const char* kind) {
  StateName key = StateName::parse(param);
  key.state = kind;
  return key.str();
}

}  // namespace

std::vector<NamedTensors> ShardedAdamW::state_by_parameter() {
  // The stream, gathered whole (a checkpoint streams it instead).
  StateStream state = stream_state(/*values=*/false, /*copy=*/false, nullptr);
  if (!state.stream) return std::vector<NamedTensors>(params_.size());
  std::map<std::string, torch::Tensor> gathered;
  state.stream(
      [&](const std::string& name, const torch::Tensor& value) { gathered[name] = value; });
  for (NamedTensors& named : state.by_parameter) {
    for (auto& [name, tensor] : named) {
      if (tensor.is_meta()) tensor = gathered.at(name);
    }
  }
  return state.by_parameter;
}

void ShardedAdamW::load_state(const std::map<std::string, torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  const auto get = [&](const std::string& param, const char* kind) -> const torch::Tensor* {
    const auto it = tensors.find(state_name(param, kind));
    return it == tensors.end() ? nullptr : &it->second;
  };
  for (const auto& p : params_) {
    if (get(p.name, "momentum") != nullptr)
      throw Error(str("checkpoint holds SGD momentum for ", p.name, "; this run uses AdamW"));
    if (get(p.name, "exp_avg") != nullptr &&
        (get(p.name, "exp_avg_sq") == nullptr || get(p.name, "step") == nullptr))
      throw Error(str("checkpoint lacks AdamW state of ", p.name));
  }
  int64_t step = 0;
  for (Part& part : parts_) {
    part.exp_avg.zero_();
    part.exp_avg_sq.zero_();
    for (const Segment& s : part.segments) {
      const std::string& name = params_[s.param].name;
      const torch::Tensor* avg = get(name, "exp_avg");
      if (avg == nullptr) continue;  // saved before the first step
      const int64_t length = s.end - s.begin;
      part.exp_avg.narrow(0, s.begin, length)
          .copy_(avg->reshape({-1}).narrow(0, s.param_offset, length));
      part.exp_avg_sq.narrow(0, s.begin, length)
          .copy_(get(name, "exp_avg_sq")->reshape({-1}).narrow(0, s.param_offset, length));
      step = get(name, "step")->item<int64_t>();
    }
  }
  // bf16 working weights: the master slices from the saved fp32 values (the trainer has rounded
  // them into the working weights already).
  for (Part& part : parts_) {
    if (!part.master.defined()) continue;
    part.master.zero_();
    for (const Segment& s : part.segments) {
      const auto it = tensors.find(params_[s.param].name);
      if (it == tensors.end()) continue;  // the trainer names a missing parameter
      const int64_t length = s.end - s.begin;
      part.master.narrow(0, s.begin, length)
          .copy_(it->second.reshape({-1}).narrow(0, s.param_offset, length));
    }
  }
  // Ranks whose slices hold only padding saw no state: agree on the step.
  torch::Tensor steps = torch::tensor({step}, torch::kLong);
  dp_.all_reduce(steps, ReduceOp::kMax);
  step_ = steps.item<int64_t>();
}

int64_t ShardedAdamW::state_bytes() const {
  int64_t bytes = 0;
  for (const Part& part : parts_) {
    bytes += part.exp_avg.nbytes() + part.exp_avg_sq.nbytes();
    if (part.master.defined()) bytes += part.master.nbytes();
  }
  return bytes;
}

StateStream ShardedAdamW::stream_state(bool values, bool copy, Communicator* over) {
  // Copies are streamed from another thread: never over the training's own communicator.
  TRIAX_CHECK(!copy || over != nullptr, "a background stream needs a communicator of its own");
  StateStream out;
  const bool state = step_ > 0;  // before the first step there is no state, as LibTorch's
  if (!values && !state) return out;
  out.by_parameter.resize(params_.size());
  const auto meta = [](const torch::Tensor& like) {
    return torch::empty(like.sizes(), torch::TensorOptions(torch::kFloat).device(torch::kMeta));
  };
  // What each bucket hands over: its members (name, offset, shape) and this rank's slices of the
  // values and of the moments, or copies of them.
  struct Member {
    std::string name;
    int64_t offset, numel;
    std::vector<int64_t> sizes;
  };
  struct Slices {
    std::vector<Member> members;
    torch::Tensor values, exp_avg, exp_avg_sq;
  };
  auto buckets = std::make_shared<std::vector<Slices>>();
  const auto take = [copy](const torch::Tensor& t) {
    return copy ? t.detach().clone() : t.detach();
  };
  for (const Part& part : parts_) {
    Slices slices;
    for (size_t k = 0; k < part.view.members.size(); ++k) {
      const auto& member = part.view.members[k];
      const OptimizedParam& p = params_[part.indices[k]];
      slices.members.push_back({p.name, member.offset, member.numel, p.tensor.sizes().vec()});
    }
    if (values) {
      // fp32 whatever the working weights' dtype: the master where there is one.
      slices.values = take(part.master.defined() ? part.master : working_slice(part.view));
    }
    if (state) {
      slices.exp_avg = take(part.exp_avg);
      slices.exp_avg_sq = take(part.exp_avg_sq);
    }
    buckets->push_back(std::move(slices));
  }
  for (size_t k = 0; k < params_.size(); ++k) {
    const OptimizedParam& p = params_[k];
    NamedTensors& mine = out.by_parameter[k];
    if (values) mine.emplace_back(p.name, meta(p.tensor));
    if (state) {
      mine.emplace_back(state_name(p.name, "exp_avg"), meta(p.tensor));
      mine.emplace_back(state_name(p.name, "exp_avg_sq"), meta(p.tensor));
      mine.emplace_back(state_name(p.name, "step"), torch::tensor({step_}, torch::kLong));
    }
  }
  Communicator* comm = over != nullptr ? over : &dp_;
  out.stream = [buckets, comm](const TensorSink& sink) {
    for (const Slices& slices : *buckets) {
      // One bucket whole at a time: the only whole state any rank holds.
      const auto hand_over = [&](const torch::Tensor& slice, const char* kind) {
        if (!slice.defined()) return;
        const torch::Tensor whole = comm->all_gather(slice);
        for (const Member& m : slices.members) {
          sink(kind == nullptr ? m.name : state_name(m.name, kind),
               whole.narrow(0, m.offset, m.numel).view(m.sizes));
        }
      };
      hand_over(slices.values, nullptr);
      hand_over(slices.exp_avg, "exp_avg");
      hand_over(slices.exp_avg_sq, "exp_avg_sq");
    }
  };
  return out;
}

}  // namespace triax
