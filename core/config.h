// defines: triax::Config and its sections, triax::load_config, triax::parse_config
//
// The YAML file mirrors these structs one to one: `parallel.tensor` is Config::parallel.tensor.
// Every field's unit and default is on its `///` line; the schema that reads, writes and
// documents them is in config_schema.cpp. There is deliberately no data-parallel size field
// that could be set on its own: dp is chosen at launch, dp = world / (tensor * pipeline), and
// `parallel.data`, if given, is only a check against that.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config_choices.h"

namespace triax {

struct ModelConfig {
  /// Architecture: "mlp" (a Fashion-MNIST classifier, 784 -> hidden... -> 10), "gpt" (a
  /// decoder-only pre-LayerNorm transformer, GPT-2's shape) or "llama" (RMSNorm, rotary
  /// positions, grouped-query attention, SwiGLU: docs/models.md). Default "mlp".
  ModelKind arch = ModelKind::kMlp;
  /// Widths of the MLP's hidden layers, in features. Default [256, 128].
  std::vector<int64_t> mlp_hidden = {256, 128};
  /// GPT: model width (features per token). Default 128.
  int64_t hidden = 128;
  /// GPT: attention heads; must be divisible by parallel.tensor. Default 4.
  int64_t heads = 4;
  /// GPT: transformer layers. Default 4.
  int64_t layers = 4;
  /// GPT: sequence length (tokens per sample; learned positions). Default 64.
  int64_t seq_len = 64;
  /// GPT: vocabulary size (256 for bytes); padded internally to a multiple of tp. Default 256.
  int64_t vocab = 256;
  /// GPT: dropout probability (embeddings, attention probabilities, residual branches). Default 0.
  double dropout = 0.0;
  /// GPT, Llama: the output projection reuses the token embedding matrix. Default true (Llama
  /// checkpoints usually untie it: the presets say false).
  bool tie_embeddings = true;
  /// GPT: the MLP's activation, "gelu" (exact, erf) or "gelu_tanh" (GPT-2's tanh
  /// approximation, what Hugging Face's GPT-2 computes). Default "gelu".
  Activation activation = Activation::kGelu;
  /// Llama: key/value heads (grouped-query attention); 0 = heads (multi-head attention). Must
  /// divide heads, and parallel.tensor must divide it. Default 0.
  int64_t kv_heads = 0;
  /// Llama: SwiGLU hidden width; 0 = Llama's rule, 2/3 of 4 x hidden rounded up to
  /// multiple_of. Default 0.
  int64_t intermediate_size = 0;
  /// Llama: what the SwiGLU width rule rounds up to. Default 256.
  int64_t multiple_of = 256;
  /// Llama: RMSNorm epsilon. Default 1e-5.
  double norm_eps = 1e-5;
  /// Llama: rotary embedding base (10000 Llama 2, 500000 Llama 3). Default 10000.
  double rope_theta = 10000.0;
  /// Llama 3.1 rotary frequency scaling: the factor (0 = none). Default 0.
  double rope_scaling_factor = 0.0;
  /// Llama 3.1 rotary scaling: low-frequency factor. Default 1.
  double rope_low_freq_factor = 1.0;
  /// Llama 3.1 rotary scaling: high-frequency factor. Default 4.
  double rope_high_freq_factor = 4.0;
  /// Llama 3.1 rotary scaling: the pretraining context length. Default 8192.
  int64_t rope_original_max_positions = 8192;
  /// Llama: biases on the q, k and v projections (Qwen2). Default false.
  bool qkv_bias = false;
};

struct ParallelConfig {
  /// Tensor-parallel size; fixed when the model is built (it shapes the weights). Default 1.
  int64_t tensor = 1;
  /// Pipeline-parallel size (stages); fixed when the model is built. Default 1.
  int64_t pipeline = 1;
  /// Expected data-parallel size, only checked: dp is world / (tensor * pipeline). 0 = any.
  int64_t data = 0;
  /// Rank order, fastest-varying axis first. Default "tp-dp-pp" (Megatron's).
  std::string order = "tp-dp-pp";
  /// Context parallelism: each rank of a group of `context` holds 1/context of every sequence's
  /// positions (parallel/cp); dp = world / (context * tensor * pipeline). Default 1.
  int64_t context = 1;
  /// With context > 1: `ring` passes keys and values around the cp group (load-balanced causal
  /// chunks; seq_len a multiple of 2 * context); `all_to_all` (Ulysses) trades the sequence split
  /// for a head split around attention (heads and kv heads divisible by context * tensor).
  /// Default ring.
  ContextMode context_mode = ContextMode::kRing;
  /// Sequence parallelism: LayerNorm, dropout and residual regions hold seq_len / tensor of the
  /// sequence on each tp rank (needs tensor > 1). Default false.
  bool sequence = false;
  /// Choose the layout at start (`parallel: auto`): tensor, pipeline, the schedule and its
  /// chunks, train.micro_batch, train.recompute, optimizer.shard, sequence and
  /// ddp.hierarchical, by the planner's predicted step time (`triax plan`: docs/plan.md); the
  /// same verdict on every rank. Resuming keeps the checkpoint's tp, pp and chunks. Default false.
  bool automatic = false;
  /// With auto: a profile from `triax calibrate`; "" = nominal costs from the FLOP count.
  /// Default "".
  std::string profile = "";
  /// With auto: MiB a rank may hold (process included); layouts predicted above it are not
  /// chosen. 0 = no limit. Default 0.
  double memory_per_rank_mb = 0.0;
};

struct TrainConfig {
  /// Samples per optimizer step, summed over all data-parallel ranks. Default 64.
  int64_t global_batch = 64;
  /// Samples per forward/backward on one rank; 0 = global_batch / dp (one micro-batch). Default 0.
  int64_t micro_batch = 0;
  /// Passes over the training set. Default 1.
  int64_t epochs = 1;
  /// Stop after this many optimizer steps (0 = run all epochs). Default 0.
  int64_t steps = 0;
  /// "sgd" (with momentum) or "adamw". Default "sgd".
  OptimizerKind optimizer = OptimizerKind::kSgd;
  /// Learning rate. Default 0.05.
  double lr = 0.05;
  /// SGD momentum (ignored by adamw). Default 0.9.
  double momentum = 0.9;
  /// Decoupled (adamw) or L2 (sgd) weight decay. Default 0.
  double weight_decay = 0.0;
  /// Seed of the initial weights and of the per-epoch shuffle (seed + epoch). Default 1234.
  int64_t seed = 1234;
  /// Shuffle the training set every epoch. Default true.
  bool shuffle = true;
  /// Print progress every N optimizer steps (0 = only at the end). Default 100.
  int64_t log_every = 100;
  /// Compute threads per rank; 0 = from the launcher (OMP_NUM_THREADS, SLURM_CPUS_PER_TASK, the
  /// CPUs the rank is bound to, else the node's CPUs / its ranks: job/thread_choice.h).
  /// Default 0.
  int64_t threads = 0;
  /// Activation recompute: "none", "full" (blocks keep only their input and run again in
  /// backward), "selective" (only the attention core is recomputed). Default "none".
  Recompute recompute = Recompute::kNone;
  /// With recompute "full": blocks per pipeline chunk to recompute, from its first; 0 = all.
  int64_t recompute_layers = 0;
  /// The first N transformer layers and the embedding (with tied embeddings also the head that
  /// shares it) are frozen: no gradients, no updates, no gradient communication, and the stage
  /// split counts them as forward only. The freeze algorithm raises it as training goes
  /// (freeze.*). Default 0.
  int64_t frozen_layers = 0;
  /// Compute precision: "fp32", or "bf16" (matmuls and attention's batched matmuls in bf16;
  /// softmax, norms, the residual stream, the loss, gradients, optimizer and checkpoints in fp32:
  /// the parameters are the fp32 master weights). Default "fp32".
  Precision precision = Precision::kFp32;
  /// How bf16 matmuls are computed (core/bf16_matmul.h; the arithmetic is the same on each path:
  /// bf16 inputs, fp32 sums, one rounding): "native" (LibTorch's bf16 kernels: oneDNN), "emulated"
  /// (fp32 products of bf16-rounded inputs), "auto" (native where the CPU has bf16 dot products
  /// and LibTorch's kernel sums in fp32, else emulated). Default "auto".
  Bf16Matmul bf16_matmul = Bf16Matmul::kAuto;
  /// The working weights' dtype: "fp32" (they are the master weights), or "bf16" (with precision
  /// bf16 and ddp.shard optimizer, gradients or parameters: the model holds bf16 roundings of an
  /// fp32 master copy that lives in the sharded optimizer's slice; gradients accumulate in fp32;
  /// checkpoints hold the master). Default "fp32".
  Precision param_dtype = Precision::kFp32;
  /// "fast", or "layout_invariant": every sum of a step (micro-batch gradients, their dp
  /// reduction, the loss, the gradient norm) in one order fixed by the global batch, so any dp,
  /// pp, schedule, recompute or ZeRO setting gives one process's bits (docs/numerics.md).
  /// Default "fast".
  Numerics numerics = Numerics::kFast;
  /// With numerics "layout_invariant": the micro-batch size too changes no bit. Each micro-batch
  /// runs sample by sample (its own forward, loss and backward, Note [Sample units]), and the
  /// samples' gradients are summed in the tree over the global sample index; the schedule and
  /// its messages stay per micro-batch. Slower (one-sample GEMMs). Default false.
  bool micro_batch_invariant = false;
  /// Clip the global gradient norm to this value (0 = no clipping). Default 0.
  double clip_grad = 0.0;
  /// AdamW's first-moment decay. Default 0.9.
  double beta1 = 0.9;
  /// AdamW's second-moment decay. Default 0.999.
  double beta2 = 0.999;
  /// AdamW's denominator epsilon. Default 1e-8.
  double eps = 1e-8;
  /// Steps of linear learning-rate warm-up from 0 to lr. Default 0.
  int64_t warmup_steps = 0;
  /// After warm-up: "constant", "cosine" or "linear" decay from lr to min_lr at the last step.
  /// Default "constant".
  LrDecay lr_decay = LrDecay::kConstant;
  /// The learning-rate floor of the decay. Default 0.
  double min_lr = 0.0;
  /// Evaluate on the held-out split every N steps (0 = only at the end). Default 0.
  int64_t eval_every = 0;
  /// Global batches of the held-out split per evaluation (0 = all of it). Default 8.
  int64_t eval_batches = 8;
};

struct DdpConfig {
  /// Gradient bucket size in MiB (all-reduced as soon as a bucket's gradients are final).
  /// Default 25.
  double bucket_mb = 25.0;
  /// A parameter that gets no gradient in a step counts as zero instead of an error. Default false.
  bool allow_unused = false;
  /// Buckets overlapped with backward; false = one all-reduce per parameter after backward (the
  /// baseline the DDP benchmark compares against). Default true.
  bool bucketed = true;
  /// Node-aware gradient all-reduce: reduce-scatter inside each node, all-reduce across nodes,
  /// all-gather inside. "auto" (default): when the dp group spans nodes with the same number of
  /// its ranks (at least 2) on each; "true": whenever the counts are equal; "leader": as true,
  /// but all-reduce inside, one all-reduce across among each node's first rank, broadcast
  /// inside (one flow per link); "false": flat.
  Hierarchical hierarchical = Hierarchical::kAuto;
  /// The dtype gradients are averaged in across dp: "fp32" (default) or "bf16" (half the bytes;
  /// each reduction step rounds to bf16, as NCCL's bf16 all-reduce). Needs ddp.bucketed: true.
  Precision reduce_dtype = Precision::kFp32;
  /// Sharded data parallelism (ZeRO): "none" (default), "optimizer" (AdamW's state: each dp rank
  /// keeps 1/dp of it; gradients reduce-scattered after backward, parameters all-gathered after
  /// the update), "gradients" (as optimizer, and each bucket is reduce-scattered as backward
  /// completes it, every micro-batch, so a rank keeps only its 1/dp of the gradient) or
  /// "parameters" (as gradients, and a rank keeps only its 1/dp of the parameters: each unit — the
  /// embedding, a block, the head — is all-gathered before its forward and its backward, the
  /// next one prefetched, and freed after: ZeRO-3, FSDP). optimizer.shard: true is the same as
  /// "optimizer".
  ShardLevel shard = ShardLevel::kNone;
  /// ddp.shard: parameters: free a unit after its forward (true, default) or keep it until a
  /// backward is done with it (at pp 1, where each micro-batch's backward follows its forward,
  /// one all-gather fewer per unit and micro-batch; in a pipeline another micro-batch's backward
  /// may free it first).
  bool reshard_after_forward = true;
  /// ddp.shard: parameters: free a unit after its backward (true, default) or keep it, once a
  /// backward gathered it, until the step ends (with reshard_after_forward: false, each unit is
  /// gathered once per step, as a pipeline keeping its stage whole across micro-batches).
  bool reshard_after_backward = true;
  /// Buckets end where a model unit ends (the embedding, a block, the head), as ddp.shard:
  /// parameters lays them out (always on there): the shard levels then share one bucket layout
  /// and reduce the same sums, bit for bit. More, smaller buckets (slower on few cores). GPT and
  /// Llama only. Default false.
  bool unit_buckets = false;
  /// How the replicas combine their gradients: "allreduce" (default: each holds the model and the
  /// optimizer, gradients averaged among them) or "parameter_server" (servers hold the parameters
  /// and AdamW's state; workers push gradients and pull weights: parameter_server.*,
  /// docs/parameter_server.md).
  DpMode mode = DpMode::kAllReduce;
};

/// ddp.mode: parameter_server (train/param_server.h, docs/parameter_server.md).
struct ParameterServerConfig {
  /// Servers per model replica position; the parameters are split among them by bytes. Default 1.
  int64_t servers = 1;
  /// "dedicated" (default): servers are ranks of their own, after the workers (world = workers +
  /// servers); "colocated": the first `servers` dp ranks also serve.
  ServerPlacement placement = ServerPlacement::kDedicated;
  /// 0 (default): synchronous, every worker's push of a step before the update.
  int64_t staleness = 0;
  /// What an update takes: "step" = one update per step, once every worker's push of it has come
  /// (the synchronous update; with staleness > 0 what is stale is the weights a worker computed
  /// it on: Stale Synchronous Parallel); "push" (staleness > 0, tp = pp = 1 only) = each worker's
  /// push applied alone as it comes, at lr / workers. "auto" (default): push when asynchronous at
  /// tp = pp = 1, else step.
  ServerApply apply = ServerApply::kAuto;
  /// Asynchronous servers: answer a worker between meetings with the weights its next gradient
  /// will be applied to, predicted as the current weights plus the last update times the updates
  /// expected before then (apply: push, workers - 1; apply: step, the steps it is ahead of the
  /// last update). Default true; no effect on synchronous servers.
  bool look_ahead = true;
};

struct OptimizerConfig {
  /// ZeRO-1, the older spelling of ddp.shard: optimizer (true: at least that level). Default false.
  bool shard = false;
  /// Hybrid sharding (HSDP) at any ddp.shard level: state and gradients are sharded within groups
  /// of this many consecutive dp ranks (e.g. one node's) and replicated across the groups, whose
  /// copies of a slice are all-reduced; 0 = one group of all dp. Must divide dp. Default 0.
  int64_t shard_group = 0;
};

struct ScheduleConfig {
  /// Pipeline schedule: "gpipe", "1f1b", "interleaved", "zbh1" (zero-bubble H1: split backward,
  /// 1F1B's memory) or "zbv" (zero-bubble V: two chunks per rank in a V). Default "1f1b".
  ScheduleKind name = ScheduleKind::k1F1B;
  /// Micro-batches per step; 0 = global_batch / (micro_batch * dp). Default 0.
  int64_t microbatches = 0;
  /// Model chunks per pipeline rank (interleaved: >= 2; zbv: 2). Default 1.
  int64_t chunks_per_rank = 1;
  /// First layer of stages 1 .. p*v-1; empty = balanced by estimated cost. Default [].
  std::vector<int64_t> layer_boundaries = {};
  /// Chrome trace-event JSON of each pipeline action per rank; "" = none. Default "".
  std::string trace = "";
  /// The optimizer step whose pipeline actions the trace records (1 = the first). Default 2.
  int64_t trace_step = 2;
};

struct DataConfig {
  /// Folder of the Fashion-MNIST gzip IDX files. Default "/usr/share/datasets/fashion-mnist".
  std::string dir = "/usr/share/datasets/fashion-mnist";
  /// Use only the first N training samples (0 = all 60000). Default 0.
  int64_t train_samples = 0;
  /// Use only the first N test samples (0 = all 10000). Default 0.
  int64_t test_samples = 0;
  /// GPT: folder written by `triax prepare-data` (train.tok, val.tok). Default
  /// "runs/tokens/fortunes".
  std::string tokens = "runs/tokens/fortunes";
  /// GPT, Llama: the tokenizer the token files were made with (`triax prepare-data
  /// --tokenizer`): "bytes", or a tokenizer file or folder (tokenizer/tokenizer.h). Decodes the
  /// sample and `triax generate`'s text. Default "bytes".
  std::string tokenizer = "bytes";
};

struct SampleConfig {
  /// GPT: tokens generated from `prompt` at the end of training (0 = none). Default 200.
  int64_t tokens = 200;
  /// GPT: the text generation starts from. Default "The ".
  std::string prompt = "The ";
  /// GPT: sample among the k most likely tokens; 1 = greedy. Default 1.
  int64_t top_k = 1;
  /// GPT: softmax temperature for top_k > 1. Default 1.
  double temperature = 1.0;
};

struct CommConfig {
  /// Collective backend: "mpi" (MPICH; mpirun, srun --mpi=pmi2), "tcp" (LibTorch's Gloo over a
  /// TCP store at MASTER_ADDR:MASTER_PORT; torchrun), or "auto" (tcp under torchrun, else mpi).
  /// Default "auto".
  Backend backend = Backend::kAuto;
  /// Seconds any blocking wait may last (a collective, a pipeline receive, a DDP bucket, a
  /// barrier, joining the job) before the job is ended on every rank, naming what was waited
  /// for; the same meaning for mpi and tcp (docs/reliability.md). Default 300.
  int64_t timeout_s = 300;
  /// A rank whose heartbeat (a thread beating every second, whatever the rank is doing) stops
  /// for this many seconds is declared lost — stopped, frozen, or its node unreachable — and the
  /// job ends on every survivor, naming it (job/heartbeat.h); a rank whose process ended is
  /// declared lost at once. 0 = no heartbeat. Default 15.
  int64_t heartbeat_s = 15;
};

struct CheckpointConfig {
  /// Folder of the checkpoints (one step_NNNNNNNN folder each, and `latest`); "" =
  /// run.dir/checkpoints. Default "".
  std::string dir = "";
  /// Save every N optimizer steps (0 = never periodically). Default 0.
  int64_t every = 0;
  /// Keep the newest N checkpoints, deleting older ones after each save (0 = keep all).
  /// Default 3.
  int64_t keep = 3;
  /// Also save after the last step, when there is a checkpoint folder (so a finished run can be
  /// exported, extended, or found finished by a requeued job). Default true.
  bool at_end = true;
  /// Write checkpoints in the background: the step pauses only to copy this rank's state into
  /// memory (the copy costs as much memory again as parameters and optimizer state); the
  /// manifest follows once every shard is written (checkpoint/background_save.h). Default false.
  bool async = false;
};

struct RunConfig {
  /// Directory for the run's outputs (resolved config, metrics.jsonl, samples); "" = write
  /// nothing. Default "".
  std::string dir = "";
  /// Peak TFLOP/s of one rank's hardware for MFU (e.g. a GPU's datasheet figure); 0 = measure
  /// an fp32 matmul on all cores of each node at start-up (CPU). Default 0.
  double peak_tflops = 0.0;
  /// Where the model computes: "cpu", or "cuda" (the GPU of this rank's local rank; one rank per
  /// job for now: docs/gpu.md). Default "cpu".
  Device device = Device::kCpu;
};

/// Online re-layout (train/relayout.h, docs/relayout.md): after each listed step the job changes
/// its tensor and pipeline sizes (dp takes the rest of the world), chunks and schedule in memory,
/// without stopping. Each list is empty (keep the current value) or one value per step.
struct RelayoutConfig {
  /// Steps after which the layout changes, strictly increasing. Default [].
  std::vector<int64_t> steps = {};
  /// parallel.tensor from each step on; [] = keep. Default [].
  std::vector<int64_t> tensor = {};
  /// parallel.pipeline from each step on; [] = keep. Default [].
  std::vector<int64_t> pipeline = {};
  /// schedule.chunks_per_rank from each step on; [] = keep. Default [].
  std::vector<int64_t> chunks_per_rank = {};
  /// schedule.name from each step on; [] = keep (made to fit the chunks). Default [].
  std::vector<std::string> schedule = {};
  /// Also change on request: rank 0 looks for run.dir/relayout (parallel.tensor,
  /// parallel.pipeline, schedule.name, schedule.chunks_per_rank) after every step. Default true.
  bool on_request = true;
};

/// The freeze algorithm (PipeTransformer's; train/freeze.h, docs/relayout.md): every `every`
/// steps it may freeze more of the bottom layers (and the embedding), then AutoPipe packs the
/// active layers into fewer stages and AutoDP widens dp (an online re-layout).
struct FreezeConfig {
  /// Steps between freeze decisions; 0 = no freezing. Default 0.
  int64_t every = 0;
  /// No decision before this step (the learning rate's warm-up, say). Default 0.
  int64_t start = 0;
  /// At most this fraction of the active layers freezes at one decision (the paper's alpha).
  /// Default 0.5.
  double rate = 0.5;
  /// At most this fraction of the layers is ever frozen. Default 0.75.
  double max_fraction = 0.75;
  /// "gradient_norm" (freeze through the active layer whose gradient norm over the last `every`
  /// steps is least, bounded by rate) or "progressive" (rate of the active layers each time).
  /// Default "gradient_norm".
  FreezeCriterion criterion = FreezeCriterion::kGradientNorm;
  /// After a freeze, re-partition the active layers into the fewest stages that stay balanced
  /// (AutoPipe) and give the freed ranks to dp (AutoDP); false = freeze in place. Default true.
  bool relayout = true;
  /// AutoCache: the first stage keeps the frozen layers' output per training sample (in
  /// run.dir/autocache/) and skips those layers for samples it has seen. Needs model.dropout 0.
  /// Default true.
  bool cache = true;
};

struct Config {
  ModelConfig model;
  ParallelConfig parallel;
  TrainConfig train;
  ScheduleConfig schedule;
  DdpConfig ddp;
  OptimizerConfig optimizer;
  DataConfig data;
  SampleConfig sample;
  CommConfig comm;
  CheckpointConfig checkpoint;
  RunConfig run;
  RelayoutConfig relayout;
  FreezeConfig freeze;
  ParameterServerConfig parameter_server;
};

/// The data-parallel shard level asked for: ddp.shard, or optimizer.shard: true's "optimizer".
inline ShardLevel shard_level(const Config& c) {
  return c.optimizer.shard && c.ddp.shard == ShardLevel::kNone ? ShardLevel::kOptimizer
                                                               : c.ddp.shard;
}

/// Whether parameter servers apply each worker's push alone: apply: push, or auto when
/// asynchronous at one model position (at tp or pp > 1 a step's pushes go together).
inline bool applies_each_push(const Config& c) {
  const ParameterServerConfig& ps = c.parameter_server;
  return ps.apply == ServerApply::kPush || (ps.apply == ServerApply::kAuto && ps.staleness > 0 &&
                                            c.parallel.tensor == 1 && c.parallel.pipeline == 1);
}

/// Reads `path`, applies `overrides` ("a.b=value", YAML syntax for the value) and validates.
/// Throws ConfigError listing every problem, one per line.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// The same from YAML text (tests, and `origin` names it in messages).
Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides = {},
                    const std::string& origin = "<string>");

/// The resolved configuration as YAML, every field included, so a run can be reproduced.
std::string to_yaml(const Config& config);

/// Every key with its type, default and meaning, one per line (`triax config --describe`).
std::string describe_config_keys();

/// The same as a Markdown table (`triax config --describe --markdown`; docs/config.md).
std::string describe_config_markdown();

}  // namespace triax
