#include "models/mlp_spec.h"

#include "core/error.h"
#include "core/strings.h"

namespace triax {

torch::Tensor MlpChunk::forward(const torch::Tensor& input, const Batch& micro) {
  TRIAX_CHECK(!input.defined(), "the MLP has one stage");
  return mlp_->forward(micro.inputs);
}

torch::Tensor MlpChunk::loss(const torch::Tensor& output, const Batch& micro) {
  return torch::nn::functional::cross_entropy(output, micro.targets);
}

torch::Tensor MlpChunk::metric(const torch::Tensor& output, const Batch& micro) {
  return output.argmax(1).eq(micro.targets).to(torch::kDouble).mean();
}

namespace {

std::vector<int64_t> widths(const ModelConfig& model) {
  std::vector<int64_t> all{kMlpInputs};
  all.insert(all.end(), model.mlp_hidden.begin(), model.mlp_hidden.end());
  all.push_back(kMlpClasses);
  return all;
}

std::vector<std::pair<int64_t, int64_t>> stage_layers(const Config& config) {
  return {{0, static_cast<int64_t>(config.model.mlp_hidden.size()) + 1}};
}

// The one model.* key the MLP is built from.
const std::vector<int64_t>& hidden(const ModelConfig& model, ModelKeys& keys) {
  return keys.read("model.mlp_hidden", model.mlp_hidden);
}

std::unique_ptr<ModelChunk> build_chunk(const Config& config, int /*stage*/,
                                        const std::vector<std::pair<int64_t, int64_t>>& /*stages*/,
                                        Communicator& /*tp*/) {
  // LibTorch's default Linear initialisation from the global generator: seeded here, the same
  // weights on every rank (and DDP's broadcast keeps them so).
  torch::manual_seed(static_cast<uint64_t>(config.train.seed));
  ModelKeys unused;
  return std::make_unique<MlpChunk>(
      MlpOptions(kMlpInputs, hidden(config.model, unused), kMlpClasses));
}

ModelKeys keys(const ModelConfig& model) {
  ModelKeys k;
  hidden(model, k);
  return k;
}

int64_t one(const ModelConfig& /*model*/) {
  return 1;
}

// 2 FLOPs per multiply-add forward, twice that backward: 6 per weight per sample.
double flops_per_sample(const ModelConfig& model) {
  const std::vector<int64_t> w = widths(model);
  double weights = 0;
  for (size_t i = 0; i + 1 < w.size(); ++i) weights += static_cast<double>(w[i] * w[i + 1]);
  return 6 * weights;
}

std::vector<int64_t> no_activation(const Config& /*config*/, int64_t /*micro_batch*/, int /*tp*/,
                                   bool /*sequence_split*/) {
  return {};
}

// fp32: weights and biases; per sample the input, each hidden layer's output before and after
// ReLU, and the logits with their softmax.
StageMemory memory(const Config& config, int /*tp*/, int64_t /*layers*/, bool /*first*/,
                   bool /*last*/) {
  const std::vector<int64_t> w = widths(config.model);
  StageMemory m;
  double per_sample = static_cast<double>(w.front() + 2 * w.back());
  for (size_t i = 0; i + 1 < w.size(); ++i) {
    m.parameter_bytes += 4.0 * static_cast<double>(w[i] * w[i + 1] + w[i + 1]);
    if (i + 2 < w.size()) per_sample += 2.0 * static_cast<double>(w[i + 1]);
  }
  m.activation_bytes = 4.0 * per_sample * static_cast<double>(config.train.micro_batch);
  return m;
}

// The profile key's terms as they were before families had their own (" h.. a.."), so profiles
// calibrated then still match.
std::string profile_terms(const ModelConfig& m) {
  return str(" h", m.hidden, " a", m.heads);
}

}  // namespace

const ModelSpec& mlp_spec() {
  static const ModelSpec spec{ModelKind::kMlp,
                              "MLP",
                              "samples",
                              "samples",
                              "6 per weight",
                              "test accuracy",
                              "test_accuracy",
                              /*metric_is_fraction=*/true,
                              /*pipelined=*/false,
                              /*generates_text=*/false,
                              check_mlp_layout,
                              stage_layers,
                              build_chunk,
                              one,
                              flops_per_sample,
                              no_activation,
                              memory,
                              keys,
                              DataSource::kFashionMnist,
                              profile_terms,
                              /*hf=*/nullptr,
                              /*kernels=*/nullptr};
  return spec;
}

}  // namespace triax
