#include "models/model_spec.h"

#include "core/error.h"
#include "models/gpt_spec.h"
#include "models/llama_spec.h"
#include "models/mlp_spec.h"

namespace triax {

torch::Tensor ModelChunk::logits(const torch::Tensor& /*output*/) {
  throw Error("this model has no next-token logits (generation is for language models)");
}

const ModelSpec& model_spec(ModelKind kind) {
  switch (kind) {
    case ModelKind::kGpt:
      return gpt_spec();
    case ModelKind::kMlp:
      return mlp_spec();
    case ModelKind::kLlama:
      return llama_spec();
  }
  throw Error("unknown model kind");
}

std::vector<const ModelSpec*> model_specs() {
  return {&gpt_spec(), &llama_spec(), &mlp_spec()};
}

}  // namespace triax
