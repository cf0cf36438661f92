#include "models/transformer_kernels.h"

namespace triax {

StageKernels transformer_kernels(const TransformerOptions& o, const KernelShape& shape) {
  const double t = shape.tp;
  const double b = static_cast<double>(shape.micro_batch);
  const double s = static_cast<double>(o.seq_len);
  const double h = static_cast<double>(o.hidden);
  const double d = h / static_cast<double>(o.heads);
  const double heads = static_cast<double>(o.heads) / t;  // this rank's
  const double kv = static_cast<double>(o.kv_head_count()) * d / t;
  const double width = static_cast<double>(o.mlp_width()) / t;
  const double e = shape.element_bytes;
  const double tokens = b * s;
  // Outside the tp regions sequence parallelism leaves each rank 1/tp of the tokens.
  const double outside = shape.sequence && shape.tp > 1 ? tokens / t : tokens;
  const bool dropout = o.dropout > 0;
  const auto matmul = [](const char* name, double m, double n, double k, bool weight) {
    Kernel x;
    x.name = name, x.m = m, x.n = n, x.k = k, x.weight = weight;
    return x;
  };
  const auto pass = [](const char* name, double bytes) {
    Kernel x;
    x.name = name, x.bytes = bytes;
    return x;
  };
  // A dropout reads and writes its tensor and writes a byte-wide mask; a residual add reads two.
  const double residual = outside * h * (3 * e + (dropout ? 1 : 0));

  StageKernels k;
  std::vector<Kernel>& layer = k.layer;
  layer.push_back(pass("norm1", 2 * outside * h * e));
  layer.push_back(matmul("qkv", tokens, (h / t) + 2 * kv, h, true));
  if (o.positions == PositionKind::kRotary) {
    layer.push_back(pass("rotary", 2 * tokens * (h / t + kv) * e));
  }
  Kernel scores = matmul("scores", s, s, d, false);
  scores.batch = b * heads, scores.attention_core = true;
  layer.push_back(scores);
  Kernel softmax = pass("softmax", 2 * b * heads * s * s * e);  // scale, mask, softmax
  softmax.attention_core = true;
  layer.push_back(softmax);
  if (dropout) {
    Kernel drop = pass("attention_dropout", b * heads * s * s * (2 * e + 1));
    drop.attention_core = true;
    layer.push_back(drop);
  }
  Kernel context = matmul("context", s, d, s, false);
  context.batch = b * heads, context.attention_core = true;
  layer.push_back(context);
  layer.push_back(matmul("proj", tokens, h, h / t, true));
  layer.push_back(pass("residual1", residual));
  layer.push_back(pass("norm2", 2 * outside * h * e));
  if (o.mlp == MlpKind::kSwiGlu) {
    layer.push_back(matmul("gate_up", tokens, 2 * width, h, true));
    layer.push_back(pass("swiglu", 3 * tokens * width * e));
    layer.push_back(matmul("down", tokens, h, width, true));
  } else {
    layer.push_back(matmul("fc", tokens, width, h, true));
    layer.push_back(pass("gelu", 2 * tokens * width * e));
    layer.push_back(matmul("fc_out", tokens, h, width, true));
  }
  layer.push_back(pass("residual2", residual));

  // The embedding: a gather of rows (and learned positions added), then dropout.
  const bool learned = o.positions == PositionKind::kLearned;
  k.first.push_back(pass("embedding", outside * h * e * (learned ? 3 : 1)));
  if (dropout) k.first.push_back(pass("embedding_dropout", outside * h * (2 * e + 1)));

  const double vocab = static_cast<double>(o.vocab) / t;
  k.last.push_back(pass("final_norm", 2 * outside * h * e));
  k.last.push_back(matmul("head", tokens, vocab, h, true));
  // Cross-entropy in fp32 over the rank's logits: read them, write the normalised ones.
  k.last.push_back(pass("cross_entropy", tokens * vocab * (e + 4 + 4)));
  return k;
}

}  // namespace triax
