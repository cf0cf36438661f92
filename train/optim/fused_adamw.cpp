#include "train/optim/fused_adamw.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <map>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/torch_compat.h"

namespace triax {
namespace {

bool dense_fp32(const torch::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat &&
         t.is_contiguous() && !t.is_sparse();
}

bool dense_fp32_cuda(const torch::Tensor& t) {
  return t.defined() && t.is_cuda() && t.scalar_type() == torch::kFloat && !t.is_sparse();
}

// Four lanes at a time where SSE2 exists (every x86-64): the compiler will not vectorise the
// scalar loop itself, because std::sqrt may set errno. Same operations in the same order in
// both loops, so a lane and the scalar tail round alike.
void update(float* p, const float* g, float* m, float* v, int64_t begin, int64_t end,
            const AdamWCoefficients& c) {
  int64_t i = begin;
#if defined(__SSE2__)
  const __m128 decay = _mm_set1_ps(c.decays ? c.decay : 1.0f);
  const __m128 beta1 = _mm_set1_ps(c.beta1), one_minus_beta1 = _mm_set1_ps(c.one_minus_beta1);
  const __m128 beta2 = _mm_set1_ps(c.beta2), one_minus_beta2 = _mm_set1_ps(c.one_minus_beta2);
  const __m128 sqrt_bias2 = _mm_set1_ps(c.sqrt_bias2), eps = _mm_set1_ps(c.eps);
  const __m128 minus_step = _mm_set1_ps(-c.step_size);
  for (; i + 4 <= end; i += 4) {
    const __m128 w = _mm_mul_ps(_mm_loadu_ps(p + i), decay);
    const __m128 gi = _mm_loadu_ps(g + i);
    const __m128 mi =
        _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(m + i), beta1), _mm_mul_ps(gi, one_minus_beta1));
    const __m128 vi = _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(v + i), beta2),
                                 _mm_mul_ps(_mm_mul_ps(one_minus_beta2, gi), gi));
    _mm_storeu_ps(m + i, mi);
    _mm_storeu_ps(v + i, vi);
    const __m128 denom = _mm_add_ps(_mm_div_ps(_mm_sqrt_ps(vi), sqrt_bias2), eps);
    _mm_storeu_ps(p + i, _mm_add_ps(w, _mm_div_ps(_mm_mul_ps(minus_step, mi), denom)));
  }
#endif
  for (; i < end; ++i) {
    const float w = c.decays ? p[i] * c.decay : p[i];
    const float mi = m[i] * c.beta1 + g[i] * c.one_minus_beta1;
    const float vi = v[i] * c.beta2 + c.one_minus_beta2 * g[i] * g[i];
    m[i] = mi;
    v[i] = vi;
    p[i] = w + -c.step_size * mi / (std::sqrt(vi) / c.sqrt_bias2 + c.eps);
  }
}

}  // namespace

AdamWCoefficients adamw_coefficients(const torch::optim::AdamWOptions& options, int64_t step) {
  const double beta1 = std::get<0>(options.betas());
  const double beta2 = std::get<1>(options.betas());
  const double bias1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double bias2 = 1 - std::pow(beta2, static_cast<double>(step));
  return {static_cast<float>(1 - options.lr() * options.weight_decay()),
          static_cast<float>(beta1),
          static_cast<float>(1 - beta1),
          static_cast<float>(beta2),
          static_cast<float>(1 - beta2),
          static_cast<float>(std::sqrt(bias2)),
          static_cast<float>(options.eps()),
          static_cast<float>(options.lr() / bias1),
          options.weight_decay() != 0};
}

void adamw_update(float* p, const float* g, float* m, float* v, int64_t n,
                  const AdamWCoefficients& c) {
  at::parallel_for(0, n, 1 << 15,
                   [&](int64_t begin, int64_t end) { update(p, g, m, v, begin, end, c); });
}

bool FusedAdamW::fusable(bool (*kind)(const torch::Tensor&)) const {
  for (const auto& group : param_groups()) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params()) {
      if (p.grad().defined() && (!kind(p) || !kind(p.grad()))) return false;
    }
  }
  return true;
}

torch::optim::AdamWParamState& FusedAdamW::state_of(const torch::Tensor& p) {
  const auto key = optimizer_state_key(p);
  auto found = state().find(key);
  if (found == state().end()) {  // as LibTorch initialises it
    auto fresh = std::make_unique<torch::optim::AdamWParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    found = state().emplace(key, std::move(fresh)).first;
  }
  return static_cast<torch::optim::AdamWParamState&>(*found->second);
}

torch::Tensor FusedAdamW::step(LossClosure closure) {
  const bool host = fusable(dense_fp32);
  const bool device = !host && fusable(dense_fp32_cuda);
  if (!host && !device) return torch::optim::AdamW::step(std::move(closure));
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    // The GPU's parameters of one step count in one list each (LibTorch's multi-tensor kernels):
    // a few launches per group rather than nine per parameter.
    std::map<int64_t, Lists> by_step;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = state_of(p);
      s.step(s.step() + 1);
      if (device) {
        Lists& lists = by_step[s.step()];
        lists.params.push_back(p);
        lists.grads.push_back(p.grad());
        lists.exp_avgs.push_back(s.exp_avg());
        lists.exp_avg_sqs.push_back(s.exp_avg_sq());
        continue;
      }
      adamw_update(p.data_ptr<float>(), p.grad().data_ptr<float>(), s.exp_avg().data_ptr<float>(),
                   s.exp_avg_sq().data_ptr<float>(), p.numel(),
                   adamw_coefficients(options, s.step()));
    }
    for (auto& [step, lists] : by_step) {
      adamw_update_lists(lists, adamw_coefficients(options, step));
    }
  }
  return loss;
}

void adamw_update_lists(FusedAdamW::Lists& l, const AdamWCoefficients& c) {
  // The formula above, op by op over every tensor of the lists.
  if (c.decays) at::_foreach_mul_(l.params, c.decay);
  at::_foreach_mul_(l.exp_avgs, c.beta1);
  at::_foreach_add_(l.exp_avgs, l.grads, c.one_minus_beta1);
  at::_foreach_mul_(l.exp_avg_sqs, c.beta2);
  at::_foreach_addcmul_(l.exp_avg_sqs, l.grads, l.grads, c.one_minus_beta2);
  std::vector<torch::Tensor> denom = at::_foreach_sqrt(l.exp_avg_sqs);
  at::_foreach_div_(denom, c.sqrt_bias2);
  at::_foreach_add_(denom, c.eps);
  at::_foreach_addcdiv_(l.params, l.exp_avgs, denom, -c.step_size);
}

}  // namespace triax
