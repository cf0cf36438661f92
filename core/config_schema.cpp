#include "core/config_schema.h"

namespace triax {
namespace {

constexpr IntRule kPositive{1};
constexpr IntRule kNonNegative{0};

// One function per section, in the order the YAML and the documentation list them.
void visit_model(Config& c, ConfigVisitor& v) {
  v.section("model", [&] {
    choice_field(v, "arch", c.model.arch, "architecture");
    v.field("mlp_hidden", c.model.mlp_hidden, kPositive, "MLP hidden layer widths (features)");
    v.field("hidden", c.model.hidden, kPositive, "GPT width (features per token)");
    v.field("heads", c.model.heads, kPositive, "GPT attention heads (divisible by tensor)");
    v.field("layers", c.model.layers, kPositive, "GPT transformer layers");
    v.field("seq_len", c.model.seq_len, kPositive, "GPT tokens per sample");
    v.field("vocab", c.model.vocab, kPositive, "GPT vocabulary size (padded to a multiple of tp)");
    v.field("dropout", c.model.dropout, RealRule{0.0, 0.95}, "GPT dropout probability");
    v.field("tie_embeddings", c.model.tie_embeddings,
            "GPT, Llama: output projection = token embedding");
    choice_field(v, "activation", c.model.activation,
                 "GPT MLP activation: gelu (exact) or gelu_tanh (GPT-2's approximation)");
    v.field("kv_heads", c.model.kv_heads, kNonNegative,
            "Llama key/value heads (grouped-query attention); 0 = heads");
    v.field("intermediate_size", c.model.intermediate_size, kNonNegative,
            "Llama SwiGLU width; 0 = 8*hidden/3 rounded up to multiple_of");
    v.field("multiple_of", c.model.multiple_of, kPositive, "Llama SwiGLU width rounding");
    v.field("norm_eps", c.model.norm_eps, RealRule{0.0, 1.0, true}, "Llama RMSNorm epsilon");
    v.field("rope_theta", c.model.rope_theta, RealRule{1.0, 1e9}, "Llama rotary base");
    v.field("rope_scaling_factor", c.model.rope_scaling_factor, RealRule{0.0, 1e4},
            "Llama 3.1 rotary frequency scaling factor; 0 = none");
    v.field("rope_low_freq_factor", c.model.rope_low_freq_factor, RealRule{0.0, 1e4, true},
            "Llama 3.1 rotary scaling: low-frequency factor");
    v.field("rope_high_freq_factor", c.model.rope_high_freq_factor, RealRule{0.0, 1e4, true},
            "Llama 3.1 rotary scaling: high-frequency factor");
    v.field("rope_original_max_positions", c.model.rope_original_max_positions, kPositive,
            "Llama 3.1 rotary scaling: pretraining context length");
    v.field("qkv_bias", c.model.qkv_bias, "Llama biases on q, k, v (Qwen2)");
  });
}

void visit_parallel(Config& c, ConfigVisitor& v) {
  v.section("parallel", [&] {
    v.field("tensor", c.parallel.tensor, kPositive,
            "tensor-parallel size, fixed when the model is built");
    v.field("pipeline", c.parallel.pipeline, kPositive,
            "pipeline stages, fixed when the model is built");
    v.field("data", c.parallel.data, kNonNegative,
            "expected dp, only checked (dp = world / (context*tensor*pipeline)); 0 = any");
    v.field("order", c.parallel.order, {},
            "rank order, fastest axis first (tp-dp-pp; cp goes after tp unless named)");
    v.field("context", c.parallel.context, kPositive,
            "context-parallel size: each rank holds 1/context of every sequence's positions "
            "(dp = world / (context*tensor*pipeline))");
    choice_field(v, "context_mode", c.parallel.context_mode,
                 "context > 1: ring (keys and values around the group) or all_to_all (Ulysses: "
                 "heads split around attention)");
    v.field("sequence", c.parallel.sequence,
            "sequence parallelism: norms, dropout and residuals hold seq_len/tensor per tp rank "
            "(needs tensor > 1)");
    v.field("auto", c.parallel.automatic,
            "choose tensor, pipeline, context (and its mode), schedule, micro_batch, recompute, "
            "ddp.shard, sequence and hierarchical at start with the planner (`parallel: auto` says "
            "the same)");
    v.field("profile", c.parallel.profile, {},
            "auto: the `triax calibrate` profile to plan with; \"\" = nominal costs");
    v.field("memory_per_rank_mb", c.parallel.memory_per_rank_mb, RealRule{0.0, 1e9},
            "auto: memory a rank may hold (MiB, process included); 0 = no limit");
  });
}

void visit_train(Config& c, ConfigVisitor& v) {
  v.section("train", [&] {
    v.field("global_batch", c.train.global_batch, kPositive,
            "samples per optimizer step over all dp ranks");
    v.field("micro_batch", c.train.micro_batch, kNonNegative,
            "samples per forward/backward on a rank; 0 = global_batch/dp");
    v.field("epochs", c.train.epochs, kPositive, "passes over the training set");
    v.field("steps", c.train.steps, kNonNegative, "stop after N optimizer steps; 0 = all epochs");
    choice_field(v, "optimizer", c.train.optimizer, "optimizer");
    v.field("lr", c.train.lr, RealRule{0.0, 10.0, true}, "learning rate");
    v.field("momentum", c.train.momentum, RealRule{0.0, 1.0}, "SGD momentum");
    v.field("weight_decay", c.train.weight_decay, RealRule{0.0, 1.0}, "weight decay");
    v.field("seed", c.train.seed, kNonNegative, "seed of weights and shuffles");
    v.field("shuffle", c.train.shuffle, "shuffle the training set every epoch");
    v.field("log_every", c.train.log_every, kNonNegative, "print progress every N steps");
    v.field("threads", c.train.threads, IntRule{0, 1024},
            "compute threads per rank; 0 = from the launcher (OMP_NUM_THREADS, "
            "SLURM_CPUS_PER_TASK, CPU binding, else node CPUs / local ranks)");
    choice_field(v, "recompute", c.train.recompute,
                 "activation recompute: full = blocks keep only their input and run again in "
                 "backward; selective = only the attention core (softmax, dropout) is recomputed");
    v.field("recompute_layers", c.train.recompute_layers, IntRule{0, 1 << 20},
            "full recompute: blocks per pipeline chunk to recompute, from its first; 0 = all");
    choice_field(v, "precision", c.train.precision,
                 "compute precision: bf16 = matmuls in bf16 with fp32 master weights, softmax, "
                 "norms, residual stream, loss, gradients, optimizer state and checkpoints");
    choice_field(v, "bf16_matmul", c.train.bf16_matmul,
                 "how bf16 matmuls run (same arithmetic: bf16 inputs, fp32 sums, one rounding): "
                 "native = oneDNN's bf16 kernels, emulated = fp32 products of bf16-rounded "
                 "inputs, auto = native where the CPU has bf16 dot products, else emulated");
    choice_field(v, "param_dtype", c.train.param_dtype,
                 "working weights: fp32 = the master weights; bf16 (with precision: bf16 and a "
                 "sharded ddp.shard) = bf16 roundings of an fp32 master kept in the optimizer's "
                 "slice, gradients accumulated in fp32, checkpoints of the master");
    choice_field(v, "numerics", c.train.numerics,
                 "fast, or layout_invariant = every sum of a step in one order fixed by the "
                 "global batch: any dp, pp, schedule, recompute or ZeRO gives one process's bits");
    v.field("frozen_layers", c.train.frozen_layers, kNonNegative,
            "the first N layers and the embedding (and a head tied to it) are frozen: no "
            "gradients, updates or gradient traffic; the freeze algorithm raises it");
    v.field("micro_batch_invariant", c.train.micro_batch_invariant,
            "with numerics: layout_invariant, the micro-batch size changes no bit either "
            "(micro-batches computed sample by sample: slower)");
    v.field("clip_grad", c.train.clip_grad, RealRule{0.0, 1e6},
            "global gradient-norm clip; 0 = off");
    v.field("beta1", c.train.beta1, RealRule{0.0, 1.0}, "AdamW first-moment decay");
    v.field("beta2", c.train.beta2, RealRule{0.0, 1.0}, "AdamW second-moment decay");
    v.field("eps", c.train.eps, RealRule{0.0, 1.0, true}, "AdamW epsilon");
    v.field("warmup_steps", c.train.warmup_steps, kNonNegative,
            "linear learning-rate warm-up steps from 0 to lr");
    choice_field(v, "lr_decay", c.train.lr_decay,
                 "decay after warm-up, from lr to min_lr at the last step");
    v.field("min_lr", c.train.min_lr, RealRule{0.0, 10.0}, "learning-rate floor of the decay");
    v.field("eval_every", c.train.eval_every, kNonNegative,
            "evaluate on the held-out split every N steps; 0 = at the end only");
    v.field("eval_batches", c.train.eval_batches, kNonNegative,
            "global batches per evaluation; 0 = the whole held-out split");
  });
}

void visit_schedule(Config& c, ConfigVisitor& v) {
  v.section("schedule", [&] {
    choice_field(v, "name", c.schedule.name, "pipeline schedule");
    v.field("microbatches", c.schedule.microbatches, kNonNegative,
            "micro-batches per step; 0 = global_batch / (micro_batch * dp)");
    v.field("chunks_per_rank", c.schedule.chunks_per_rank, IntRule{1, 64},
            "model chunks per pipeline rank (interleaved: >= 2)");
    v.field("layer_boundaries", c.schedule.layer_boundaries, kPositive,
            "first layer of stages 1..; empty = balanced by estimated cost");
    v.field("trace", c.schedule.trace, {}, "Chrome trace JSON path; empty = none");
    v.field("trace_step", c.schedule.trace_step, kPositive, "the step the trace records");
  });
}

void visit_ddp(Config& c, ConfigVisitor& v) {
  v.section("ddp", [&] {
    v.field("bucket_mb", c.ddp.bucket_mb, RealRule{0.0, 4096.0, true},
            "gradient bucket size (MiB)");
    v.field("allow_unused", c.ddp.allow_unused, "treat a parameter without gradient as zero");
    v.field("bucketed", c.ddp.bucketed,
            "buckets overlapped with backward; false = per-parameter all-reduce after backward");
    choice_field(v, "hierarchical", c.ddp.hierarchical,
                 "gradient all-reduce inside each node first, then across nodes (auto: when the dp "
                 "group spans nodes evenly; leader: one rank per node crosses)");
    choice_field(v, "reduce_dtype", c.ddp.reduce_dtype,
                 "dtype gradients are averaged in across dp (bf16: half the bytes, rounded to "
                 "bf16 per reduction step; needs bucketed: true)");
    choice_field(v, "shard", c.ddp.shard,
                 "sharded data parallelism (ZeRO): optimizer = 1/dp of AdamW's state per rank; "
                 "gradients = also 1/dp of the gradient (each bucket reduce-scattered as backward "
                 "completes it, every micro-batch); parameters = also 1/dp of the parameters "
                 "(each block all-gathered for its forward and backward, then freed: ZeRO-3, "
                 "FSDP) (needs train.optimizer: adamw, bucketed: true; optimizer.shard_group for "
                 "hybrid)");
    v.field("reshard_after_forward", c.ddp.reshard_after_forward,
            "shard: parameters: free each block after its forward (false: keep it until its "
            "backward)");
    v.field("reshard_after_backward", c.ddp.reshard_after_backward,
            "shard: parameters: free each block after its backward (false: keep it until the step "
            "ends; both false: one all-gather per block and step)");
    v.field("unit_buckets", c.ddp.unit_buckets,
            "buckets end where a block (or the embedding, the head) ends, as shard: parameters "
            "lays them out: every shard level then reduces the same sums, bit for bit (GPT, "
            "Llama)");
    choice_field(v, "mode", c.ddp.mode,
                 "allreduce = replicas average their gradients among themselves; "
                 "parameter_server = workers push gradients to servers holding the parameters and "
                 "optimizer state, and pull the new weights (parameter_server.*)");
  });
}

void visit_optimizer(Config& c, ConfigVisitor& v) {
  v.section("optimizer", [&] {
    v.field("shard", c.optimizer.shard,
            "ZeRO-1, the older spelling of ddp.shard: optimizer (true = at least that level)");
    v.field("shard_group", c.optimizer.shard_group, kNonNegative,
            "hybrid sharding (HSDP): shard within groups of this many consecutive dp ranks (e.g. "
            "one node), replicate across groups (their slices all-reduced); 0 = all of dp; must "
            "divide dp (needs ddp.shard, or shard: true)");
  });
}

void visit_data(Config& c, ConfigVisitor& v) {
  v.section("data", [&] {
    v.field("dir", c.data.dir, {}, "folder of the Fashion-MNIST gzip IDX files");
    v.field("train_samples", c.data.train_samples, kNonNegative,
            "use only the first N training samples; 0 = all");
    v.field("test_samples", c.data.test_samples, kNonNegative,
            "use only the first N test samples; 0 = all");
    v.field("tokens", c.data.tokens, {},
            "GPT: folder from `triax prepare-data` (train.tok, val.tok)");
    v.field("tokenizer", c.data.tokenizer, {},
            "GPT, Llama: what the token files were made with (`prepare-data --tokenizer`): "
            "bytes, or a tokenizer file or folder; decodes samples and `triax generate`");
  });
}

void visit_sample(Config& c, ConfigVisitor& v) {
  v.section("sample", [&] {
    v.field("tokens", c.sample.tokens, IntRule{0, 100000},
            "GPT: tokens generated from the prompt after training; 0 = none");
    v.field("prompt", c.sample.prompt, {}, "GPT: text the generation starts from");
    v.field("top_k", c.sample.top_k, IntRule{1, 1 << 20},
            "GPT: sample among the k likeliest; 1 = greedy");
    v.field("temperature", c.sample.temperature, RealRule{0.0, 100.0, true},
            "GPT: softmax temperature when top_k > 1");
  });
}

void visit_comm(Config& c, ConfigVisitor& v) {
  v.section("comm", [&] {
    choice_field(v, "backend", c.comm.backend,
                 "collectives: mpi (mpirun, srun), tcp (Gloo over torchrun's store), auto");
    v.field("timeout_s", c.comm.timeout_s, IntRule{1, 86400},
            "seconds any blocking wait (collective, pipeline receive, DDP bucket, barrier, "
            "start-up) may last before every rank stops (mpi and tcp)");
    v.field("heartbeat_s", c.comm.heartbeat_s, IntRule{0, 3600},
            "seconds without a heartbeat before a rank is declared lost (stopped, frozen, or "
            "its node unreachable) and the job ends; 0 = no heartbeat");
  });
}

void visit_checkpoint(Config& c, ConfigVisitor& v) {
  v.section("checkpoint", [&] {
    v.field("dir", c.checkpoint.dir, {}, "checkpoint folder; empty = run.dir/checkpoints");
    v.field("every", c.checkpoint.every, kNonNegative,
            "save every N steps; 0 = never periodically");
    v.field("keep", c.checkpoint.keep, kNonNegative, "keep the newest N checkpoints; 0 = all");
    v.field("at_end", c.checkpoint.at_end,
            "also save after the last step (when checkpoint.dir or run.dir is set)");
    v.field("async", c.checkpoint.async,
            "write shards on a background thread after an in-memory snapshot (the manifest "
            "follows at a later step); false = the step waits for the save");
  });
}

void visit_run(Config& c, ConfigVisitor& v) {
  v.section("run", [&] {
    v.field("dir", c.run.dir, {},
            "output directory (config, metrics.jsonl, samples); empty = none");
    v.field("peak_tflops", c.run.peak_tflops, RealRule{0.0, 1e6},
            "one rank's peak TFLOP/s for MFU; 0 = measure each node's matmul peak");
    choice_field(v, "device", c.run.device,
                 "where the model computes: cpu, or cuda (the local rank's GPU; one rank per job "
                 "for now, docs/gpu.md)");
  });
}

}  // namespace

void visit_relayout(Config& c, ConfigVisitor& v) {
  v.section("relayout", [&] {
    v.field("steps", c.relayout.steps, kPositive,
            "change the layout in memory after each of these steps (strictly increasing; "
            "docs/relayout.md)");
    v.field("tensor", c.relayout.tensor, kPositive,
            "parallel.tensor from each step on (one per step; [] = keep)");
    v.field("pipeline", c.relayout.pipeline, kPositive,
            "parallel.pipeline from each step on (one per step; [] = keep); dp takes the rest");
    v.field("chunks_per_rank", c.relayout.chunks_per_rank, IntRule{1, 64},
            "schedule.chunks_per_rank from each step on (one per step; [] = keep)");
    v.field("schedule", c.relayout.schedule, choice_names<ScheduleKind>(),
            "schedule.name from each step on (one per step; [] = keep, fitted to the chunks)");
    v.field("on_request", c.relayout.on_request,
            "also change when run.dir/relayout appears (parallel.tensor, "
            "parallel.pipeline, schedule.name, schedule.chunks_per_rank), after the step it is "
            "seen at");
  });
}

void visit_freeze(Config& c, ConfigVisitor& v) {
  v.section("freeze", [&] {
    v.field("every", c.freeze.every, kNonNegative,
            "steps between freeze decisions (PipeTransformer's freeze algorithm); 0 = off");
    v.field("start", c.freeze.start, kNonNegative,
            "the first freeze decision is after this step (0: after step freeze.every), then one "
            "every freeze.every steps");
    v.field("rate", c.freeze.rate, RealRule{0.0, 1.0, true},
            "at most this fraction of the active layers freezes at one decision (alpha)");
    v.field("max_fraction", c.freeze.max_fraction, RealRule{0.0, 1.0},
            "at most this fraction of the layers is ever frozen");
    choice_field(v, "criterion", c.freeze.criterion,
                 "gradient_norm = freeze through the active layer whose gradient norm over the "
                 "last `every` steps is least (bounded by rate); progressive = rate of the active "
                 "layers each time");
    v.field("relayout", c.freeze.relayout,
            "after a freeze, fewest balanced stages for the active layers (AutoPipe) and the "
            "freed ranks to dp (AutoDP); false = freeze in place");
    v.field("cache", c.freeze.cache,
            "AutoCache: keep the frozen layers' output per training sample (run.dir/autocache/) "
            "and skip those layers for samples seen before; needs model.dropout 0");
  });
}

void visit_parameter_server(Config& c, ConfigVisitor& v) {
  v.section("parameter_server", [&] {
    v.field("servers", c.parameter_server.servers, kPositive,
            "ddp.mode: parameter_server: servers per model position, the parameters split among "
            "them by bytes");
    choice_field(
        v, "placement", c.parameter_server.placement,
        "dedicated = servers on ranks of their own after the workers (world = workers + "
        "servers x tensor x pipeline); colocated = the first `servers` dp ranks serve too");
    v.field("staleness", c.parameter_server.staleness, kNonNegative,
            "0 = synchronous (every worker's push before each update); S >= 1 = asynchronous, "
            "a worker at most S steps ahead of the slowest");
    choice_field(
        v, "apply", c.parameter_server.apply,
        "step = one update per step from every worker's push of it (with staleness: "
        "Stale Synchronous Parallel); push = each worker's push applied alone at lr / "
        "workers (staleness >= 1, tensor = pipeline = 1); auto = push when asynchronous at "
        "tensor = pipeline = 1, else step");
    v.field("look_ahead", c.parameter_server.look_ahead,
            "asynchronous servers: answer a worker with the weights its next gradient will be "
            "applied to (current + last update x the updates expected before then) instead of "
            "the current ones");
  });
}

void visit_config(Config& c, ConfigVisitor& v) {
  visit_model(c, v);
  visit_parallel(c, v);
  visit_train(c, v);
  visit_schedule(c, v);
  visit_ddp(c, v);
  visit_optimizer(c, v);
  visit_data(c, v);
  visit_sample(c, v);
  visit_comm(c, v);
  visit_checkpoint(c, v);
  visit_run(c, v);
  visit_relayout(c, v);
  visit_freeze(c, v);
  visit_parameter_server(c, v);
}

}  // namespace triax
