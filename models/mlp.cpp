#include "models/mlp.h"

#include "core/bf16_matmul.h"
#include "core/error.h"

namespace triax {

void check_mlp_layout(const Config& config) {
  if (config.parallel.tensor != 1) {
    throw ConfigError(str("parallel.tensor: ", config.parallel.tensor,
                          " is not supported by "
                          "model.arch=mlp (valid: 1; the MLP is data-parallel only)"));
  }
  if (config.parallel.pipeline != 1) {
    throw ConfigError(str("parallel.pipeline: ", config.parallel.pipeline,
                          " is not supported by "
                          "model.arch=mlp (valid: 1; the MLP is data-parallel only)"));
  }
  if (config.schedule.chunks_per_rank != 1) {
    throw ConfigError(str("schedule.chunks_per_rank: ", config.schedule.chunks_per_rank,
                          " is not supported by model.arch=mlp (valid: 1; the MLP is one chunk)"));
  }
}

MlpImpl::MlpImpl(MlpOptions options) : options_(std::move(options)) {
  std::vector<int64_t> widths{options_.in_features()};
  widths.insert(widths.end(), options_.hidden().begin(), options_.hidden().end());
  widths.push_back(options_.out_features());
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    TRIAX_CHECK(widths[i] > 0 && widths[i + 1] > 0, "MLP widths must be positive");
    layers_.push_back(
        register_module(str("layer", i), torch::nn::Linear(widths[i], widths[i + 1])));
  }
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    x = mixed_linear(x, layers_[i]->weight, layers_[i]->bias);
    if (i + 1 < layers_.size()) x = torch::relu(x);
  }
  return x;
}

}  // namespace triax
