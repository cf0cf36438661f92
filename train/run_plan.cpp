#include "train/run_plan.h"

#include <cmath>

#include "models/stage_balance.h"

#include <cstdio>

#include "core/error.h"
#include "data/token_file.h"
#include "models/model_spec.h"
#include "schedules/schedule_check.h"
#include "tokenizer/tokenizer.h"
#include "train/compute_device.h"
#include "train/freeze.h"
#include "train/lr_schedule.h"

namespace triax {
namespace {

// The schedule's micro-batches: schedule.microbatches, or global_batch / (micro_batch * dp).
Schedule pipeline_schedule(const Config& config, const BatchPlan& batch, ScheduleCache* cache) {
  const ScheduleConfig& s = config.schedule;
  int64_t m = s.microbatches;
  if (m == 0) {
    m = batch.num_microbatches;
  } else if (config.train.micro_batch != 0 && m != batch.num_microbatches) {
    throw ConfigError(str("schedule.microbatches: ", m,
                          " disagrees with train.global_batch / "
                          "(train.micro_batch * dp) = ",
                          config.train.global_batch, " / (", batch.micro_batch, " * ", batch.dp,
                          ") = ", batch.num_microbatches, " (valid: 0 to derive it, or ",
                          batch.num_microbatches, ")"));
  }
  const std::tuple<int, int, int, int> key{
      static_cast<int>(s.name), static_cast<int>(config.parallel.pipeline), static_cast<int>(m),
      static_cast<int>(s.chunks_per_rank)};
  if (cache) {
    const std::lock_guard<std::mutex> hold(cache->lock);
    if (auto it = cache->schedules.find(key); it != cache->schedules.end()) return it->second;
  }
  Schedule schedule = make_schedule(s.name, static_cast<int>(config.parallel.pipeline),
                                    static_cast<int>(m), static_cast<int>(s.chunks_per_rank));
  check_schedule(schedule);
  if (cache) {
    const std::lock_guard<std::mutex> hold(cache->lock);
    cache->schedules.emplace(key, schedule);
  }
  return schedule;
}

int64_t total_steps(const TrainConfig& train, int64_t steps_per_epoch) {
  const int64_t all = train.epochs * steps_per_epoch;
  return train.steps > 0 ? std::min(train.steps, all) : all;
}

// The tokenizer data.tokenizer names must be the one the token files were made with: at least
// its vocabulary must be theirs (a mismatch would decode samples into nonsense).
void check_tokenizer(const Config& c) {
  if (c.data.tokenizer == "bytes") return;  // the default; synthetic test files use small ids
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(c.data.tokenizer);
  const int64_t files = TokenFile(GptCorpus::train_path(c.data.tokens)).vocab();
  if (tokenizer->vocab_size() != files) {
    throw ConfigError(str("data.tokenizer: ", c.data.tokenizer, " has ", tokenizer->vocab_size(),
                          " tokens, but ", GptCorpus::train_path(c.data.tokens),
                          " was made with a vocabulary of ", files,
                          " (valid: the tokenizer given to `triax prepare-data --tokenizer`)"));
  }
}

void open_gpt_data(RunPlan& plan) {
  const Config& c = plan.config;
  const TrainConfig& train = c.train;
  plan.corpus = std::make_shared<const GptCorpus>(
      GptCorpus::open(c.data.tokens, c.model.seq_len, c.model.vocab));
  check_tokenizer(c);
  DataPlan& d = plan.data;
  d.train_samples = plan.corpus->train.size();
  d.val_samples = plan.corpus->val.size();
  d.steps_per_epoch = d.train_samples / train.global_batch;
  if (d.steps_per_epoch == 0) {
    throw ConfigError(str("train.global_batch: ", train.global_batch, " is larger than the ",
                          d.train_samples, " training sequences of ",
                          GptCorpus::train_path(c.data.tokens), " (valid: at most ",
                          d.train_samples, ")"));
  }
  const int64_t val_batches = d.val_samples / train.global_batch;
  if (val_batches == 0) {
    throw ConfigError(str("train.global_batch: ", train.global_batch, " is larger than the ",
                          d.val_samples, " held-out sequences of ",
                          GptCorpus::val_path(c.data.tokens), " (valid: at most ", d.val_samples,
                          "; or prepare the data with a larger --val-fraction)"));
  }
  d.eval_batches = train.eval_batches > 0 ? std::min(train.eval_batches, val_batches) : val_batches;
  d.total_steps = total_steps(train, d.steps_per_epoch);
}

void open_mlp_data(RunPlan& plan) {
  const Config& c = plan.config;
  plan.images = std::make_shared<const FashionMnist>(
      load_fashion_mnist(c.data.dir, "train", c.data.train_samples));
  plan.test_images = std::make_shared<const FashionMnist>(
      load_fashion_mnist(c.data.dir, "t10k", c.data.test_samples));
  DataPlan& d = plan.data;
  d.train_samples = plan.images->size();
  d.val_samples = plan.test_images->size();
  d.steps_per_epoch = d.train_samples / c.train.global_batch;
  if (d.steps_per_epoch == 0) {
    throw ConfigError(str("train.global_batch: ", c.train.global_batch, " is larger than the ",
                          d.train_samples, " training samples (data.train_samples=",
                          c.data.train_samples, "); valid: at most ", d.train_samples));
  }
  d.total_steps = total_steps(c.train, d.steps_per_epoch);
}

void open_data(RunPlan& plan, DataCheck check) {
  if (check == DataCheck::kSkip) {
    plan.data_note = "not opened";
    return;
  }
  try {
    if (model_spec(plan.model).data == DataSource::kTokenFiles) {
      open_gpt_data(plan);  // token files, for every language model
    } else {
      open_mlp_data(plan);
    }
    plan.has_data = true;
  } catch (const ConfigError& e) {
    if (check == DataCheck::kOpen) throw;
    plan.data_note = e.what();
  }
}

// Recompute and sequence parallelism are the GPT block's: the MLP would silently ignore them.
void check_gpt_only_options(const Config& config) {
  if (model_spec(config.model.arch).pipelined) return;
  if (config.train.recompute != Recompute::kNone) {
    throw ConfigError(str("train.recompute: '", config.train.recompute,
                          "' recomputes GPT blocks; model.arch is '", config.model.arch,
                          "' (set train.recompute: none)"));
  }
  if (config.parallel.sequence) {
    throw ConfigError(
        str("parallel.sequence: true splits GPT activations along the sequence; "
            "model.arch is '",
            config.model.arch, "' (set parallel.sequence: false)"));
  }
  if (config.parallel.context > 1) {
    throw ConfigError(str("parallel.context: ", config.parallel.context,
                          " splits language models' sequences; model.arch is '", config.model.arch,
                          "' (set parallel.context: 1)"));
  }
}

// What context parallelism does not compose with yet, named before anything runs.
void check_context_parallel(const Config& config) {
  const int64_t cp = config.parallel.context;
  if (cp == 1) return;
  if (config.train.numerics == Numerics::kLayoutInvariant) {
    throw ConfigError(
        str("train.numerics: layout_invariant is not extended to parallel.context: ", cp,
            " yet (ring attention merges its blocks in the ring's order; set "
            "train.numerics: fast or parallel.context: 1)"));
  }
  if (config.optimizer.shard_group > 0) {
    throw ConfigError(str("optimizer.shard_group: ", config.optimizer.shard_group,
                          " is not supported with parallel.context: ", cp,
                          " yet (the state is sharded over all of dp x cp; set "
                          "optimizer.shard_group: 0 or parallel.context: 1)"));
  }
}

// Sharded data parallelism splits AdamW's moments (and, from ddp.shard: gradients on, the
// gradients) over DDP's buckets, so it needs both (and the transformer trainer).
void check_sharded_optimizer(const Config& config, const BatchPlan& batch) {
  const ShardLevel level = shard_level(config);
  // The key the user set, as messages name it.
  const std::string key = config.ddp.shard != ShardLevel::kNone
                              ? str("ddp.shard: ", config.ddp.shard)
                              : std::string("optimizer.shard: true");
  const std::string off = !config.optimizer.shard ? std::string("ddp.shard: none")
                          : config.ddp.shard == ShardLevel::kNone
                              ? std::string("optimizer.shard: false")
                              : std::string("ddp.shard: none and optimizer.shard: false");
  if (level == ShardLevel::kParameters && config.train.numerics == Numerics::kLayoutInvariant) {
    throw ConfigError(
        "ddp.shard: parameters reduce-scatters each micro-batch's gradients as backward completes "
        "them, but train.numerics: layout_invariant sums whole gradients in a tree over the "
        "micro-batches first (set ddp.shard: optimizer or gradients, which reduce as ZeRO-1 there, "
        "or train.numerics: fast)");
  }
  if (config.ddp.unit_buckets && !model_spec(config.model.arch).pipelined) {
    throw ConfigError(
        str("ddp.unit_buckets: true ends buckets where a transformer block ends, but "
            "model.arch is '",
            config.model.arch, "' (set ddp.unit_buckets: false)"));
  }
  if (level != ShardLevel::kParameters &&
      (!config.ddp.reshard_after_forward || !config.ddp.reshard_after_backward)) {
    throw ConfigError(str("ddp.reshard_after_",
                          !config.ddp.reshard_after_forward ? "forward" : "backward",
                          ": false keeps gathered parameters, but ddp.shard is ", level,
                          " (parameters are whole on every rank); it needs ddp.shard: parameters "
                          "(or leave it true)"));
  }
  const int64_t group = config.optimizer.shard_group;
  if (group > 0 && level == ShardLevel::kNone) {
    throw ConfigError(str("optimizer.shard_group: ", group,
                          " shards AdamW's state within groups of dp ranks, but ddp.shard is none "
                          "(set ddp.shard: optimizer or gradients, or optimizer.shard_group: 0)"));
  }
  if (group > 0 && batch.dp % group != 0) {
    std::vector<std::string> valid{"0 (all of dp)"};
    for (int64_t s = 1; s <= batch.dp; ++s) {
      if (batch.dp % s == 0) valid.push_back(str(s));
    }
    throw ConfigError(str("optimizer.shard_group: ", group, " does not divide dp ", batch.dp,
                          " (the groups of consecutive dp ranks must tile the dp group); valid: ",
                          join(valid, ", ")));
  }
  if (group > 0 && group < batch.dp &&
      (config.ddp.hierarchical == Hierarchical::kTrue ||
       config.ddp.hierarchical == Hierarchical::kLeader)) {
    throw ConfigError(str("ddp.hierarchical: ", config.ddp.hierarchical,
                          " is a node-aware all-reduce over all of dp, but optimizer.shard_group: ",
                          group, " < dp ", batch.dp,
                          " already reduces within groups and then across them (set "
                          "ddp.hierarchical: auto or false, or optimizer.shard_group: 0)"));
  }
  if (level == ShardLevel::kNone) return;
  if (!model_spec(config.model.arch).pipelined) {
    throw ConfigError(str(key, " is supported for model.arch: gpt, llama, not '", config.model.arch,
                          "' (set ", off, ")"));
  }
  if (config.train.optimizer != OptimizerKind::kAdamW) {
    throw ConfigError(str(key, " shards AdamW's state, but train.optimizer is '",
                          config.train.optimizer, "' (set train.optimizer: adamw, or ", off, ")"));
  }
  if (!config.ddp.bucketed) {
    throw ConfigError(str(key,
                          " reduce-scatters DDP's buckets, but ddp.bucketed is false (set "
                          "ddp.bucketed: true, or ",
                          off, ")"));
  }
}

// ddp.mode: parameter_server (train/param_server.h): what it composes with. The servers hold the
// fp32 parameters and the whole optimizer state of unsharded DDP buckets, one server group per
// (tp, pp) position (cp 1), on a layout fixed for the run.
void check_parameter_server(const Config& config) {
  const ParameterServerConfig& ps = config.parameter_server;
  if (config.ddp.mode != DpMode::kParameterServer) return;
  const std::string off = "or ddp.mode: allreduce";
  const ParallelConfig& p = config.parallel;
  if (p.automatic) {
    throw ConfigError(
        str("parallel.auto: true plans the layout of an all-reduce run, but ddp.mode "
            "is parameter_server (set parallel.auto: false, ",
            off, ")"));
  }
  if (p.context != 1) {
    throw ConfigError(str("parallel.context: ", p.context,
                          ": ddp.mode: parameter_server runs at parallel.context: 1 so far (the "
                          "servers do not sum the cp ranks' gradients yet; set parallel.context: "
                          "1, ",
                          off, ")"));
  }
  if (config.train.frozen_layers > 0 && p.pipeline > 1) {
    throw ConfigError(str("train.frozen_layers: ", config.train.frozen_layers,
                          " at parallel.pipeline: ", p.pipeline,
                          " can leave a stage with no parameter that learns, and so a position "
                          "with nothing to serve (set train.frozen_layers: 0 or pipeline: 1, ",
                          off, ")"));
  }
  if (config.schedule.chunks_per_rank != 1) {
    throw ConfigError(str("schedule.chunks_per_rank: ", config.schedule.chunks_per_rank,
                          " puts both ends of a tied model in two chunks of one rank, whose copies "
                          "the parameter servers do not sum yet (set schedule.chunks_per_rank: 1 "
                          "and a one-chunk schedule, ",
                          off, ")"));
  }
  if (config.run.device != Device::kCpu) {
    throw ConfigError(str("run.device: ", config.run.device,
                          ": the parameter servers take gradients and send weights through host "
                          "(MPI) messages, not built for GPU tensors yet (set run.device: cpu, ",
                          off, ")"));
  }
  if (ps.staleness > 0 && ps.placement == ServerPlacement::kColocated) {
    throw ConfigError(str("parameter_server.staleness: ", ps.staleness,
                          " asks for asynchronous servers, which must answer while the workers "
                          "compute, but placement: colocated servers serve only while their own "
                          "worker waits (set parameter_server.placement: dedicated, or "
                          "staleness: 0)"));
  }
  if (ps.staleness == 0 && ps.apply == ServerApply::kPush) {
    throw ConfigError(
        str("parameter_server.apply: push applies each worker's push alone, which "
            "only asynchronous servers do, but parameter_server.staleness: 0 is "
            "synchronous (set staleness >= 1 for asynchronous servers, or apply: "
            "step or auto)"));
  }
  if (ps.apply == ServerApply::kPush && (p.tensor != 1 || p.pipeline != 1)) {
    throw ConfigError(str(
        "parameter_server.apply: push applies each worker's push alone, clipped by the norm of "
        "its own gradient at one model position, which is built at parallel.tensor: 1, "
        "pipeline: 1 only (got tensor ",
        p.tensor, ", pipeline ", p.pipeline,
        "; set parameter_server.apply: step or auto for one update per step across positions)"));
  }
  if (shard_level(config) != ShardLevel::kNone) {
    throw ConfigError(str("ddp.shard: ", shard_level(config),
                          " splits the optimizer state over dp ranks, but under ddp.mode: "
                          "parameter_server the servers hold it (set ddp.shard: none and "
                          "optimizer.shard: false, ",
                          off, ")"));
  }
  if (!config.ddp.bucketed) {
    throw ConfigError(
        str("ddp.bucketed: false all-reduces each parameter after backward, but "
            "ddp.mode: parameter_server pushes DDP's buckets (set ddp.bucketed: "
            "true, ",
            off, ")"));
  }
  if (config.ddp.reduce_dtype != Precision::kFp32 || config.train.param_dtype != Precision::kFp32) {
    throw ConfigError(str(
        config.ddp.reduce_dtype != Precision::kFp32 ? "ddp.reduce_dtype: " : "train.param_dtype: ",
        Precision::kBf16,
        " is not supported with ddp.mode: parameter_server yet: the servers "
        "take fp32 gradients and hold fp32 weights (set it to fp32, ",
        off, "; train.precision: bf16 computes in bf16 with either)"));
  }
  if (config.freeze.every > 0 || !config.relayout.steps.empty()) {
    throw ConfigError(str(config.freeze.every > 0 ? "freeze.every" : "relayout.steps",
                          " changes the layout while training, but the parameter servers are "
                          "placed for the whole run (set ",
                          config.freeze.every > 0 ? "freeze.every: 0" : "relayout.steps: []", ", ",
                          off, ")"));
  }
}

// bf16 working weights round an fp32 master that only the sharded optimizer keeps (beside its
// moments), for a model whose matmuls already take bf16 inputs.
void check_param_dtype(const Config& config) {
  if (config.train.param_dtype != Precision::kBf16) return;
  if (!model_spec(config.model.arch).pipelined) {
    throw ConfigError(str("train.param_dtype: bf16 is supported for model.arch: gpt, llama, not '",
                          config.model.arch, "' (set train.param_dtype: fp32)"));
  }
  if (config.train.precision != Precision::kBf16) {
    throw ConfigError(
        str("train.param_dtype: bf16 feeds bf16 weights to bf16 matmuls, but "
            "train.precision is ",
            config.train.precision, " (set train.precision: bf16, or train.param_dtype: fp32)"));
  }
  if (shard_level(config) == ShardLevel::kNone) {
    throw ConfigError(
        "train.param_dtype: bf16 keeps the fp32 master weights in the sharded optimizer's "
        "slices, but ddp.shard is none (set ddp.shard: optimizer, gradients or parameters, or "
        "train.param_dtype: fp32)");
  }
  if (config.train.numerics == Numerics::kLayoutInvariant) {
    throw ConfigError(
        "train.param_dtype: bf16 adds each bf16 gradient into an fp32 main gradient as backward "
        "hands it over, but train.numerics: layout_invariant sums fp32 gradients in a tree over "
        "the micro-batches (set train.param_dtype: fp32, or train.numerics: fast)");
  }
}

// A bf16 wire is DDP's bucket copy; the per-parameter baseline has none.
void check_reduce_dtype(const Config& config) {
  if (config.ddp.reduce_dtype == Precision::kBf16 && !config.ddp.bucketed) {
    throw ConfigError(
        "ddp.reduce_dtype: bf16 rounds DDP's buckets into a bf16 copy, but ddp.bucketed is false "
        "(set ddp.bucketed: true, or ddp.reduce_dtype: fp32)");
  }
}

// Layout-invariant numerics: a rank's micro-batches must form a subtree of the tree over the
// global batch (with dp > 1 the tree over ranks joins those subtrees: their count a power of two);
// a bf16 wire rounds only where there is a wire (dp > 1), and dropout draws each rank's masks from
// its own stream in its own order: both would make the bits depend on the layout.
void check_numerics(const Config& config, const BatchPlan& batch) {
  if (config.train.micro_batch_invariant && config.train.numerics != Numerics::kLayoutInvariant) {
    throw ConfigError(
        str("train.micro_batch_invariant: true sums each sample's gradients in the "
            "tree of layout-invariant numerics, but train.numerics is ",
            config.train.numerics,
            " (set train.numerics: layout_invariant, or "
            "train.micro_batch_invariant: false)"));
  }
  if (config.train.numerics != Numerics::kLayoutInvariant) return;
  const int64_t samples = batch.local_batch;
  if (config.train.micro_batch_invariant && batch.dp > 1 && (samples & (samples - 1)) != 0) {
    // Global batches near this one that give a power of two per rank in whole micro-batches.
    std::vector<std::string> valid;
    for (int64_t per_rank = 1; per_rank * batch.dp <= 4 * batch.global_batch; per_rank *= 2) {
      if (4 * per_rank * batch.dp >= batch.global_batch && per_rank % batch.micro_batch == 0) {
        valid.push_back(str(per_rank * batch.dp));
      }
    }
    const std::string fix = valid.empty()
                                ? str("none with train.micro_batch: ", batch.micro_batch,
                                      " (a power of two per rank needs a power-of-two micro-batch)")
                                : join(valid, ", ");
    throw ConfigError(str("train.global_batch: ", batch.global_batch, " gives ", samples,
                          " samples per rank (dp ", batch.dp,
                          "); train.micro_batch_invariant at dp > 1 needs a power-of-two count "
                          "per rank (each rank's samples are a subtree of the global batch's "
                          "tree); valid train.global_batch: ",
                          fix, "; or train.micro_batch_invariant: false"));
  }
  const int64_t m = batch.num_microbatches;
  if (!config.train.micro_batch_invariant && batch.dp > 1 && (m & (m - 1)) != 0) {
    std::vector<std::string> valid;
    for (int64_t b = 1; b <= batch.local_batch; ++b) {
      const int64_t count = batch.local_batch / b;
      if (batch.local_batch % b == 0 && (count & (count - 1)) == 0) valid.push_back(str(b));
    }
    throw ConfigError(
        str("train.micro_batch: ", batch.micro_batch, " gives ", m,
            " micro-batches per rank (global_batch ", batch.global_batch, " / dp ", batch.dp, " / ",
            batch.micro_batch,
            "); train.numerics: layout_invariant at dp > 1 needs a power-of-two count per rank "
            "(each rank's micro-batches are a subtree of the global batch's tree); valid: ",
            join(valid, ", "), ", or train.numerics: fast"));
  }
  if (!config.ddp.bucketed) {
    throw ConfigError(
        "train.numerics: layout_invariant sums gradients in DDP's buckets, but ddp.bucketed is "
        "false (set ddp.bucketed: true, or train.numerics: fast)");
  }
  if (config.ddp.reduce_dtype != Precision::kFp32) {
    throw ConfigError(str("ddp.reduce_dtype: ", config.ddp.reduce_dtype,
                          " rounds gradients only where they cross ranks (dp > 1), so the sums "
                          "would depend on dp; train.numerics: layout_invariant needs "
                          "ddp.reduce_dtype: fp32 (or set train.numerics: fast)"));
  }
  if (config.model.dropout > 0) {
    throw ConfigError(str("model.dropout: ", config.model.dropout,
                          " draws each rank's masks from its own stream in its own order, so they "
                          "would depend on the layout; train.numerics: layout_invariant needs "
                          "model.dropout: 0 (or set train.numerics: fast)"));
  }
}

}  // namespace

int training_ranks(const Config& config, int world_size) {
  const ParameterServerConfig& ps = config.parameter_server;
  if (config.ddp.mode != DpMode::kParameterServer || ps.placement != ServerPlacement::kDedicated) {
    return world_size;
  }
  const ParallelConfig& p = config.parallel;
  const int64_t positions = std::max<int64_t>(1, p.tensor * p.pipeline * p.context);
  const int64_t servers = ps.servers * positions;
  const int64_t workers = world_size - servers;
  if (workers < positions || workers % positions != 0) {
    throw ConfigError(str(
        "parameter_server.servers: ", ps.servers, " dedicated server(s) per model position take ",
        servers, " of the ", world_size, " ranks, leaving ", std::max<int64_t>(0, workers),
        " to train, which is not a positive multiple of the ", positions,
        " ranks of a model replica (valid: a world of (dp + ", ps.servers, ") x ", positions,
        " ranks, e.g. ", (1 + ps.servers) * positions, " or ", (2 + ps.servers) * positions,
        "; or fewer servers; or parameter_server.placement: colocated)"));
  }
  return static_cast<int>(workers);
}

RunPlan plan_run(const Config& config, int world_size, DataCheck data, ScheduleCache* schedules) {
  RunPlan plan;
  plan.config = config;
  plan.model = config.model.arch;
  const ModelSpec& spec = model_spec(plan.model);
  check_parameter_server(config);
  plan.layout = ParallelLayout::from_config(config.parallel, training_ranks(config, world_size));
  spec.check_layout(config);
  plan.batch = BatchPlan::create(config.train, plan.layout.dp_size());
  if (config.ddp.mode == DpMode::kParameterServer &&
      config.parameter_server.placement == ServerPlacement::kColocated &&
      config.parameter_server.servers > plan.layout.dp_size()) {
    throw ConfigError(str("parameter_server.servers: ", config.parameter_server.servers,
                          " colocated servers are dp ranks, but dp is ", plan.layout.dp_size(),
                          " (valid: 1 to ", plan.layout.dp_size(),
                          "; or parameter_server.placement: dedicated)"));
  }
  check_gpt_only_options(config);
  check_context_parallel(config);
  check_param_dtype(config);
  check_compute_device(config, world_size);
  // A run that trains needs its GPU now, before the data are opened or any communicator exists.
  if (data == DataCheck::kOpen) compute_device(config.run.device, 0);
  check_sharded_optimizer(config, plan.batch);
  check_reduce_dtype(config);
  check_numerics(config, plan.batch);
  check_freeze(config);
  plan.stage_layers = spec.stage_layers(config);
  plan.schedule = pipeline_schedule(config, plan.batch, schedules);
  const int tp = plan.layout.tp_size();
  plan.sequence_parallel = config.parallel.sequence && tp > 1;
  plan.activation_shape =
      spec.activation_shape(config, plan.batch.micro_batch, tp, plan.sequence_parallel);
  plan.eval_activation_shape = spec.activation_shape(config, plan.batch.micro_batch, tp, false);
  if (spec.data == DataSource::kTokenFiles) {
    check_lr_schedule(config.train);  // the configuration's own mistakes before the data's
  } else {
    // The MLP's data is local and cheap to check, so its absence is named before the LR rule.
    if (data != DataCheck::kSkip) check_fashion_mnist_files(config.data.dir);
    check_lr_schedule(config.train);
  }
  open_data(plan, data);
  return plan;
}

std::string RunPlan::describe() const {
  std::string text = str("\n", layout.table(), batch.describe(), "\n", numerics_guarantee(), "\n");
  if (config.ddp.mode == DpMode::kParameterServer) {
    const ParameterServerConfig& ps = config.parameter_server;
    const bool dedicated = ps.placement == ServerPlacement::kDedicated;
    const int64_t positions = layout.tp_size() * layout.pp_size() * layout.cp_size();
    text += str(
        "parameter servers: ", ps.servers, " per model position, ", ps.placement,
        dedicated ? str(" (", ps.servers * positions, " ranks of their own after the ",
                        layout.world_size(), " workers: world ",
                        layout.world_size() + ps.servers * positions, ")")
                  : str(" (dp ranks 0..", ps.servers - 1, " serve too)"),
        ps.staleness == 0
            ? std::string(", synchronous: each step every worker pushes its gradients "
                          "and pulls the new weights\n")
            : str(", asynchronous: ",
                  applies_each_push(config) ? "each worker's push is applied alone"
                                            : "one update per step from every worker's push of it",
                  ", a worker at most ", ps.staleness, " step(s) ahead of the slowest\n"));
  }
  if (model_spec(model).pipelined) {
    text += schedule.table() + "  stage layers:";
    for (size_t i = 0; i < stage_layers.size(); ++i) {
      text += str(" s", i, "=[", stage_layers[i].first, ",", stage_layers[i].second, ")");
    }
    const StageCosts costs = stage_costs(config.model, model_spec(model).flops_per_unit);
    text +=
        "\n  estimated cost per stage, in layers (the first adds the embedding, the last the "
        "head and loss):";
    for (double c : estimated_stage_costs(stage_layers, costs)) {
      text += str(" ", std::round(c / costs.layer * 10) / 10);
    }
    const double chunk = 1.0 / schedule.chunks;
    const SimulationResult sim = simulate(schedule, {chunk, 2 * chunk, 0.0, 0.5});
    char line[160];
    std::snprintf(line, sizeof(line),
                  "\n  simulated bubble %.3f (unit costs: F = I = W, B = I + W); peak activations "
                  "per rank: ",
                  sim.bubble_fraction);
    text += line + join(sim.peak_activations, " ") + " micro-batch chunks\n";
  }
  if (has_data) {
    text +=
        str("data: ", data.train_samples, " training samples (", data.steps_per_epoch,
            " steps per epoch), ", data.val_samples, " held-out; ", data.total_steps, " steps\n");
  } else {
    text += str("data: ", data_note, "\n");
  }
  return text;
}

std::string RunPlan::numerics_guarantee() const {
  if (config.train.numerics == Numerics::kFast) {
    return "numerics: fast (sums in the layout's order: another layout agrees to rounding (~1e-6 "
           "in fp32), not bit for bit; train.numerics: layout_invariant makes dp, pp, schedules, "
           "recompute and ZeRO-1 bit-identical)";
  }
  return str(
      "numerics: layout_invariant (losses, gradient norms and parameters bit-identical to "
      "one process at any dp, pipeline depth, schedule, recompute and ZeRO-1",
      config.train.micro_batch_invariant
          ? ", and at any micro-batch size (computed sample by sample: "
            "train.micro_batch_invariant), with the same threads per rank"
          : str(" with micro-batches of ", batch.micro_batch, " and the same threads per rank"),
      layout.tp_size() > 1 ? "; not across tensor-parallel sizes: tp splits the matmuls' sums" : "",
      ": docs/numerics.md)");
}

}  // namespace triax
