#include "parallel/dp/ordered_grad_norm.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace triax {
namespace {

// FNV-1a: a key's position in the order, the same in every process.
int64_t key_hash(const std::string& key) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return static_cast<int64_t>(h);
}

template <typename T>
double lane_sum_of_squares(const T* x, int64_t n) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const double v = static_cast<double>(x[i + j]);
      lane[j] += v * v;
    }
  }
  double tail = 0;
  for (; i < n; ++i) tail += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return (((lane[0] + lane[1]) + (lane[2] + lane[3])) +
          ((lane[4] + lane[5]) + (lane[6] + lane[7]))) +
         tail;
}

}  // namespace

double ordered_sum_of_squares(const torch::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return 0.0;
  const torch::Tensor c = t.contiguous();
  if (c.scalar_type() == torch::kDouble)
    return lane_sum_of_squares(c.data_ptr<double>(), c.numel());
  const torch::Tensor f = c.scalar_type() == torch::kFloat ? c : c.to(torch::kFloat);
  return lane_sum_of_squares(f.data_ptr<float>(), f.numel());
}

OrderedGradNorm::OrderedGradNorm(std::vector<std::pair<std::string, torch::Tensor>> counted,
                                 Communicator& model_parallel)
    : comm_(model_parallel) {
  std::vector<int64_t> keys;
  for (auto& [name, tensor] : counted) {
    params_.push_back(tensor);
    keys.push_back(key_hash(name));
  }
  const int ranks = comm_.size();
  torch::Tensor count = torch::tensor({static_cast<int64_t>(keys.size())}, torch::kLong);
  torch::Tensor counts = torch::empty({ranks}, torch::kLong);
  comm_.all_gather_async(counts, count)->wait();
  width_ = std::max<int64_t>(1, counts.max().item<int64_t>());
  torch::Tensor mine = torch::zeros({width_}, torch::kLong);
  for (size_t k = 0; k < keys.size(); ++k) mine[static_cast<int64_t>(k)] = keys[k];
  torch::Tensor all = torch::empty({ranks * width_}, torch::kLong);
  comm_.all_gather_async(all, mine)->wait();
  std::vector<std::pair<int64_t, int64_t>> by_key;  // (key, position)
  for (int r = 0; r < ranks; ++r) {
    for (int64_t k = 0; k < counts[r].item<int64_t>(); ++k) {
      by_key.emplace_back(all[r * width_ + k].item<int64_t>(), r * width_ + k);
    }
  }
  std::sort(by_key.begin(), by_key.end());
  for (size_t k = 0; k < by_key.size(); ++k) {
    TRIAX_CHECK(k == 0 || by_key[k].first != by_key[k - 1].first,
                "OrderedGradNorm: two counted parameters share a key");
    order_.push_back(by_key[k].second);
  }
}

double OrderedGradNorm::norm() {
  torch::Tensor squares = torch::zeros({width_}, torch::kDouble);
  double* s = squares.data_ptr<double>();
  const int64_t n = static_cast<int64_t>(params_.size());
  // Each parameter's sum is its own: threads only share out whole parameters.
  at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      s[k] = ordered_sum_of_squares(params_[static_cast<size_t>(k)].grad());
    }
  });
  torch::Tensor all = torch::empty({comm_.size() * width_}, torch::kDouble);
  comm_.all_gather_async(all, squares)->wait();
  const double* a = all.data_ptr<double>();
  double total = 0;
  for (int64_t position : order_) total += a[position];
  return std::sqrt(total);
}

}  // namespace triax
