// Benchmark (not a test): per-rank memory of GPT training, measured against the analytic model.
//   mpirun -np N build/triax_bench_memory [--set KEY=VALUE ...]
// Default: the main job's GPT scaled up (hidden 512, 8 layers, 8 heads, sequence 256,
// vocabulary 256), micro-batch 4, one micro-batch per step, AdamW, dropout 0; layout and
// recompute from --set (parallel.tensor, parallel.pipeline, train.recompute, ...), dp = the rest.
// Measured: bytes of live tensors (core/tensor_memory.h: a counting allocator in front of
// LibTorch's), not the resident set. Parameters = their tensors; gradients = what building the
// trainer added beyond them (DDP's buckets, and with optimizer.shard its slices); optimizer state
// = what the first step left behind (with optimizer.shard: the trainer's count of its moments);
// activations = the peak of live tensors during the next step above its start.
// Theory (fp32, dropout 0, per rank; a = heads, t = tp, b = micro-batch):
//   parameters 4 bytes each, gradients 4, AdamW 8 (two moments): 16 bytes per parameter;
//   activations per block, Korthikanti et al. 2022's sbh(34 + 5as/h) (16-bit, with dropout masks)
//   rewritten for what this implementation keeps in fp32 without dropout: sbh(16 + 48/t) +
//   4as^2b/t bytes (LayerNorm inputs and the replicated inputs of the column-parallel layers 16;
//   q, k, v 12/t, attention output 4/t, GELU input and output 32/t; softmax output 4as^2b/t),
//   plus the embedding output, the final norm and the logits with their softmax: 12sbh + 8sbV/t;
//   a pipeline stage before the last keeps its output and the gradient it receives: 8sbh.
//   Sequence parallelism (parallel.sequence) divides every sbh term above by t as well: the
//   column-parallel layers keep their input's local part and gather it again in backward.
//   selective recompute drops each block's s^2 term but one; full recompute keeps each block's
//   input (4sbh), and one block's worth plus the gradient arriving at it (4sbh) during its
//   recomputation.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/tensor_memory.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/mpi_runtime.h"
#include "train/gpt_trainer.h"

using namespace triax;

namespace {

Config scaled_up_gpt() {
  Config c;
  c.model.arch = ModelKind::kGpt;
  c.model.layers = 8;
  c.model.hidden = 512;
  c.model.heads = 8;
  c.model.seq_len = 256;
  c.model.vocab = 256;
  c.train.micro_batch = 4;
  c.train.optimizer = OptimizerKind::kAdamW;
  c.train.lr = 1e-4;
  c.train.threads = 1;
  return c;
}

struct Theory {
  double params = 0, activations = 0;
};

// This rank's parameters and peak activations by the formulas above.
Theory theory(const Config& c, int tp, int layers_here, bool first_stage, bool last_stage) {
  const double h = static_cast<double>(c.model.hidden);
  const double s = static_cast<double>(c.model.seq_len);
  const double b = static_cast<double>(c.train.micro_batch);
  const double a = static_cast<double>(c.model.heads);
  const double t = tp;
  const double v_padded = static_cast<double>((c.model.vocab + tp - 1) / tp * tp);
  Theory th;
  // A block: qkv 3h^2/t + 3h/t, proj h^2/t + h, fc 4h^2/t + 4h/t, fc_out 4h^2/t + h, 2 norms 4h.
  const double block = 12 * h * h / t + 7 * h / t + 6 * h;
  th.params = layers_here * block;
  const bool has_embedding = first_stage || (last_stage && c.model.tie_embeddings);
  if (has_embedding) th.params += v_padded / t * h;
  if (first_stage) th.params += s * h;  // positions
  if (last_stage) th.params += 2 * h;   // final norm
  th.params *= 4;

  // Sequence parallelism splits what tensor parallelism leaves replicated by tp as well.
  const double r = c.parallel.sequence && tp > 1 ? 1.0 / t : 1.0;
  const double sbh = s * b * h;
  const double s2 = 4 * a * s * s * b / t;  // softmax output of one block
  const double full_block = sbh * (16 * r + 48 / t) + s2;
  // A stage before the last also holds its output and the gradient received for it.
  const double outside = (first_stage ? 4 * sbh * r : 0) +
                         (last_stage ? 8 * sbh * r + 8 * s * b * v_padded / t : 8 * sbh * r);
  const Recompute mode = c.train.recompute;
  const double stored = mode == Recompute::kFull ? (layers_here + 1) * 4 * sbh * r + full_block
                        : mode == Recompute::kSelective ? layers_here * (full_block - s2) + s2
                                                        : layers_here * full_block;
  // A recomputed block's backward under sequence parallelism also holds, for a moment, its
  // gathered input, the whole-sequence input gradient and that gradient's copy for the
  // reduce-scatter (3 x 4sbh); with everything else split, that transient is the peak's edge.
  const double gather_transient = mode == Recompute::kFull && r < 1 ? 12 * sbh : 0;
  th.activations = stored + outside + gather_transient;
  return th;
}

}  // namespace

int main(int argc, char** argv) {
  TensorMemory::install();
  MpiRuntime mpi(&argc, &argv);
  std::vector<std::string> overrides;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--set") == 0) overrides.push_back(argv[++i]);
  }
  std::shared_ptr<Communicator> world = MpiCommunicator::world();
  Config config = parse_config(to_yaml(scaled_up_gpt()), overrides);
  const int model_ranks = static_cast<int>(config.parallel.tensor * config.parallel.pipeline);
  const int dp = world->size() / model_ranks;
  config.train.global_batch = config.train.micro_batch * dp;
  torch::set_num_threads(static_cast<int>(config.train.threads));
  const RunPlan plan = plan_run(config, world->size(), DataCheck::kSkip);
  ParallelContext context(world, plan.layout);
  const auto batch = [&](int step) {
    torch::manual_seed(step);
    return torch::randint(0, config.model.vocab,
                          {config.train.global_batch, config.model.seq_len + 1}, torch::kLong);
  };

  const int64_t at_start = TensorMemory::live();
  GptTrainer trainer(plan, context);
  double params = 0;
  int layers_here = 0;
  bool first = false, last = false;
  for (auto& chunk : trainer.chunks()) {
    for (const auto& p : chunk->parameters()) params += static_cast<double>(p.nbytes());
    layers_here += static_cast<int>(chunk->options().last_layer - chunk->options().first_layer);
    first = first || chunk->options().has_embedding;
    last = last || chunk->options().has_head;
  }
  const int64_t built = TensorMemory::live();
  // A forward first, so caches (the causal masks) are not counted as optimizer state.
  trainer.evaluate_local(batch(0).narrow(0, 0, config.train.global_batch / dp));
  const int64_t ready = TensorMemory::live();
  trainer.step(batch(1));
  const int64_t after_first = TensorMemory::live();
  TensorMemory::reset_peak();
  trainer.step(batch(2));
  const double activations = static_cast<double>(TensorMemory::peak() - after_first);

  const Theory th = theory(config, context.tp_size(), layers_here, first, last);
  // Without sharding: what building the trainer added beyond the parameters (DDP's buckets) and
  // what the first step left behind (AdamW's moments). With it the moments exist from the start,
  // so the trainer's own count of them is taken and set apart.
  const bool shard = config.optimizer.shard;
  const double optimizer = shard ? static_cast<double>(trainer.optimizer_state_bytes())
                                 : static_cast<double>(after_first - ready);
  const double grads = static_cast<double>(built - at_start) - params - (shard ? optimizer : 0);
  // ZeRO-1: the moments of this rank's slices (8/dp bytes per parameter), and DDP also holds the
  // averaged gradient slice next to its buckets (4/dp).
  const double grads_theory = th.params * (shard ? 1.0 + 1.0 / dp : 1.0);
  const double optimizer_theory = 2 * th.params / (shard ? dp : 1);
  // Rows: this rank's measured figures and the theory, gathered to rank 0 in rank order.
  torch::Tensor mine = torch::tensor({params, th.params, grads, grads_theory, optimizer,
                                      optimizer_theory, activations, th.activations},
                                     torch::kDouble);
  const torch::Tensor all = world->all_gather(mine.unsqueeze(0));
  if (world->rank() == 0) {
    const double mib = 1024.0 * 1024.0;
    for (int r = 0; r < world->size(); ++r) {
      const auto row = all[r];
      const auto f = [&](int k) { return row[k].item<double>(); };
      std::printf(
          "%-6s dp%d tp%d pp%d %-9s %-8s rank %d | params %6.1f MiB (theory %6.1f) | grads "
          "%6.1f (%6.1f) | AdamW %6.1f (%6.1f) | activations %6.1f (%6.1f, measured/theory "
          "%.2f)\n",
          "memory", dp, context.tp_size(), context.pp_size(), choice_name(config.train.recompute).c_str(),
          (std::string(shard ? "zero1" : "") + (config.parallel.sequence ? "+sp" : "")).c_str(), r,
          f(0) / mib, f(1) / mib, f(2) / mib, f(3) / mib, f(4) / mib, f(5) / mib, f(6) / mib,
          f(7) / mib, f(6) / f(7));
    }
  }
  return 0;
}
