#include "models/stage_balance.h"

#include <algorithm>
#include <limits>

namespace triax {

StageCosts stage_costs(const ModelConfig& model, double (*flops)(const ModelConfig&)) {
  StageCosts c;
  ModelConfig fewer = model;
  fewer.layers = std::max<int64_t>(model.layers - 1, 0);
  c.layer = flops(model) - flops(fewer);
  ModelConfig one_word = model;  // (a vocabulary of one: the families' options stay valid)
  one_word.vocab = 1;
  c.last = flops(model) - flops(one_word);
  c.first = 6.0 * static_cast<double>(model.hidden);
  return c;
}

double StageCosts::layers(int64_t from, int64_t to) const {
  const int64_t cold = std::max<int64_t>(0, std::min(to, frozen) - from);
  return (static_cast<double>(to - from - cold) + static_cast<double>(cold) / 3.0) * layer;
}

std::vector<double> estimated_stage_costs(const std::vector<std::pair<int64_t, int64_t>>& ranges,
                                          const StageCosts& costs) {
  std::vector<double> out;
  for (size_t s = 0; s < ranges.size(); ++s) {
    double cost = costs.layers(ranges[s].first, ranges[s].second);
    if (s == 0) cost += costs.first;
    if (s + 1 == ranges.size()) cost += costs.last;
    out.push_back(cost);
  }
  return out;
}

std::vector<std::pair<int64_t, int64_t>> balance_layers(
    int64_t layers, int parts, const StageCosts& costs,
    const std::vector<std::pair<int64_t, int64_t>>& even) {
  const auto worst = [&](const std::vector<std::pair<int64_t, int64_t>>& ranges) {
    const auto all = estimated_stage_costs(ranges, costs);
    return *std::max_element(all.begin(), all.end());
  };
  // best[s][i]: the least maximum cost of stages 0..s-1 over layers [0, i); from[s][i] the
  // start of stage s-1 in that split.
  const double inf = std::numeric_limits<double>::infinity();
  const size_t L = static_cast<size_t>(layers), P = static_cast<size_t>(parts);
  std::vector<std::vector<double>> best(P + 1, std::vector<double>(L + 1, inf));
  std::vector<std::vector<int64_t>> from(P + 1, std::vector<int64_t>(L + 1, -1));
  best[0][0] = 0;
  for (size_t s = 1; s <= P; ++s) {
    for (size_t i = s; i <= L; ++i) {
      for (size_t j = s - 1; j < i; ++j) {
        if (best[s - 1][j] == inf) continue;
        double cost = costs.layers(static_cast<int64_t>(j), static_cast<int64_t>(i));
        if (s == 1) cost += costs.first;
        if (s == P) cost += costs.last;
        const double candidate = std::max(best[s - 1][j], cost);
        if (candidate < best[s][i]) {
          best[s][i] = candidate;
          from[s][i] = static_cast<int64_t>(j);
        }
      }
    }
  }
  if (worst(even) <= best[P][L] * (1 + 1e-12)) return even;
  std::vector<std::pair<int64_t, int64_t>> ranges(P);
  int64_t end = layers;
  for (size_t s = P; s >= 1; --s) {
    const int64_t start = from[s][static_cast<size_t>(end)];
    ranges[s - 1] = {start, end};
    end = start;
  }
  return ranges;
}

}  // namespace triax
