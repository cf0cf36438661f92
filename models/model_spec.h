// defines: triax::Batch, triax::ModelChunk, triax::StageMemory, triax::DataSource,
//          triax::ModelSpec, triax::model_spec, triax::model_specs
//
// A model family as a spec (torchtitan's TrainSpec): everything the trainer, the training loop,
// checkpoints, the memory benchmark and the planner need from a model, so none of them says
// "GPT". A new family is a folder of model code and one ModelSpec, not a new trainer.
//   build_chunk     the modules of one pipeline chunk (stage s of p*v), for this rank's tp group;
//                   its layers set the parameter traits the trainer asks (parallel/tp/shard_spec.h)
//   stage_layers    the layer range of every stage (checked: each stage needs a layer)
//   activation_shape the tensor one micro-batch sends between stages
//   flops_per_unit  training FLOPs per token (per sample for a classifier), for MFU
//   units_per_sample what throughput counts per sample (GPT: seq_len tokens)
//   memory          this rank's parameter and peak activation bytes (the memory bench's theory)
//   metric          what evaluation measures (GPT: held-out loss; MLP: test accuracy)
//   data            where its samples come from (token files | Fashion-MNIST)
//   model_keys      the model.* keys the build reads, with their values (what a checkpoint's
//                   model is: resume refuses any difference)
//   profile_terms   the sizes a calibrated profile's timings depend on (plan/profile.h's key)
//   hf              its Hugging Face form (models/hf_family.h), or none
//   kernels         its forward's matmuls and element-wise passes per rank (a device's roofline)
// Batches are rows of samples: inputs and targets with the sample on dim 0, so a micro-batch is
// a slice of both and a dp rank's share is a subset of rows.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "models/hf_family.h"
#include "models/kernel_work.h"
#include "models/model_keys.h"
#include "models/prefix_cache.h"
#include "parallel/comm/communicator.h"
#include "parallel/dp/parameter_gate.h"

namespace triax {

/// Samples in rows: GPT inputs/targets [n, seq_len] token ids; MLP images [n, 784], labels [n].
struct Batch {
  Batch() = default;
  Batch(torch::Tensor inputs_, torch::Tensor targets_, torch::Tensor samples_ = torch::Tensor())
      : inputs(std::move(inputs_)), targets(std::move(targets_)), samples(std::move(samples_)) {}
  torch::Tensor inputs;
  torch::Tensor targets;
  /// Training batches of token data: each row's index in the training set ([n] int64, on the
  /// CPU), what AutoCache keys its rows by (models/prefix_cache.h); else undefined.
  torch::Tensor samples;
  int64_t size() const { return inputs.size(0); }
  /// Rows [first, first + count) of each.
  Batch slice(int64_t first, int64_t count) const {
    const auto rows = [&](const torch::Tensor& t) {
      return t.defined() ? t.narrow(0, first, count) : t;
    };
    return Batch{rows(inputs), rows(targets), rows(samples)};
  }
  /// Inputs and targets on `device` (themselves where they are there already; an undefined one
  /// stays so); the sample indices stay on the CPU.
  Batch to(const torch::Device& device) const {
    const auto move = [&](const torch::Tensor& t) { return t.defined() ? t.to(device) : t; };
    return Batch{move(inputs), move(targets), samples};
  }
};

/// One pipeline chunk of a model on this rank, as the trainer and the executor drive it.
class ModelChunk {
 public:
  virtual ~ModelChunk() = default;
  /// The chunk's modules (parameters, train()/eval()).
  virtual torch::nn::Module& module() = 0;
  /// `input`: the previous stage's activation, or undefined on the first stage, which reads
  /// `micro.inputs`.
  virtual torch::Tensor forward(const torch::Tensor& input, const Batch& micro) = 0;
  /// Last stage: the micro-batch's mean training loss from this chunk's output.
  virtual torch::Tensor loss(const torch::Tensor& output, const Batch& micro) = 0;
  /// Last stage: the micro-batch's mean evaluation metric (ModelSpec::metric_name).
  virtual torch::Tensor metric(const torch::Tensor& output, const Batch& micro) = 0;
  /// Last stage of a language model: next-token logits [b, s, vocab], gathered over tp
  /// (generation). Others throw.
  virtual torch::Tensor logits(const torch::Tensor& output);
  /// Parameters whose gradients each tp rank computes from its part of the sequence
  /// (sequence parallelism): finalize_model_grads sums them over tp.
  virtual std::vector<torch::Tensor> sequence_partial_parameters() { return {}; }
  /// Layout-invariant numerics on a chunk holding both ends of a tied model: the leaf its head
  /// reads the tied weight through (TransformerImpl::tied_head_alias), whose gradient joins the
  /// tied sum as a copy would. Else undefined.
  virtual torch::Tensor tied_head_alias() { return torch::Tensor(); }
  /// ZeRO-3 (ddp.shard: parameters): the unit of the named parameter — the part of the chunk
  /// gathered whole at once (parallel/dp/parameter_gate.h) — or -1 where the chunk cannot gate
  /// its parameters; set_parameter_gate() is then never called.
  virtual int parameter_unit(const std::string& /*name*/) const { return -1; }
  /// The gate the chunk calls around each unit's forward (null: parameters are whole).
  virtual void set_parameter_gate(ParameterGate* /*gate*/) {}
  /// Context parallelism (parallel.context > 1, language models): batches then hold this rank's
  /// part of every sequence and attention reaches the rest over `group` (null: whole sequences).
  virtual void set_context_parallel(Communicator* /*group*/, ContextMode /*mode*/) {}
  /// Random streams saved in checkpoints, by name ("dropout_shared"), and their restore (a name
  /// missing from `state` leaves its stream as it is).
  virtual std::vector<std::pair<std::string, torch::Tensor>> rng_state() { return {}; }
  virtual void set_rng_state(const std::map<std::string, torch::Tensor>& /*state*/) {}
  /// AutoCache on the first stage (null: none): the chunk takes its frozen prefix's output from
  /// `cache` for the training samples it holds and runs the prefix only for the others. False
  /// where the chunk cannot (then it is never used).
  virtual bool set_prefix_cache(PrefixCache* /*cache*/) { return false; }
};

/// This rank's memory by the family's formulas (bytes).
struct StageMemory {
  double parameter_bytes = 0;
  double activation_bytes = 0;  ///< peak during a step, above its start
  /// The part of activation_bytes only one micro-batch holds at a time (full recompute's
  /// replayed block): a schedule keeping k micro-batches holds k x (activation - transient) +
  /// transient.
  double transient_bytes = 0;
  /// What one micro-batch holds in addition between its input-gradient pass and its weight pass
  /// (zero-bubble schedules: the captured output gradients of each operation that consumes a
  /// parameter, schedules/split_backward.h).
  double deferred_weight_bytes = 0;
};

/// Where a family's samples come from (train/batch_source.h reads them).
enum class DataSource {
  kTokenFiles,   ///< data.tokens / data.text: token sequences of seq_len + 1
  kFashionMnist  ///< data.dir: 28x28 images and their labels
};

struct ModelSpec {
  ModelKind kind;
  const char* name;         ///< "GPT", "MLP": how logs name the model
  const char* unit;         ///< what throughput counts: "tokens" or "samples"
  const char* unit_short;   ///< in the progress line: "tok", "samples"
  const char* flops_rule;   ///< how flops_per_unit counts, for the start-up line
  const char* metric_name;  ///< "val loss", "test accuracy"
  const char* metric_key;   ///< its metrics.jsonl key: "val_loss", "test_accuracy"
  bool metric_is_fraction;  ///< printed as a percentage (accuracy) rather than a loss
  bool pipelined;           ///< supports pipeline (and tensor) parallelism
  bool generates_text;      ///< a language model: samples text at the end of training

  /// Throws ConfigError (every rank, before communication) when the model cannot take the
  /// configured layout.
  void (*check_layout)(const Config& config);
  /// [first, last) layers of each of the p * v stages.
  std::vector<std::pair<int64_t, int64_t>> (*stage_layers)(const Config& config);
  /// Stage `stage`'s chunk; same weights whatever the layout (seeded from train.seed).
  std::unique_ptr<ModelChunk> (*build_chunk)(const Config& config, int stage,
                                             const std::vector<std::pair<int64_t, int64_t>>& stages,
                                             Communicator& tp);
  /// Tokens per sample (GPT: seq_len) or 1.
  int64_t (*units_per_sample)(const ModelConfig& model);
  /// Training FLOPs (forward + backward) per unit.
  double (*flops_per_unit)(const ModelConfig& model);
  /// One micro-batch's activation between stages; `sequence_split`: sequence parallelism is on
  /// (training), so each tp rank sends its part of the sequence.
  std::vector<int64_t> (*activation_shape)(const Config& config, int64_t micro_batch, int tp,
                                           bool sequence_split);
  /// Parameters and peak activations of a rank holding `layers` layers (and the embedding on the
  /// first stage, the head on the last), at tensor parallelism `tp`.
  StageMemory (*memory)(const Config& config, int tp, int64_t layers, bool first_stage,
                        bool last_stage);
  /// The model.* keys build_chunk reads that shape the weights or change what they compute, with
  /// the values read (models/model_keys.h).
  ModelKeys (*model_keys)(const ModelConfig& model);
  DataSource data;
  /// The model's sizes that a calibrated profile's timings depend on, as its key names them
  /// (" h768 a12"; the Llama adds its kv heads and MLP width).
  std::string (*profile_terms)(const ModelConfig& model);
  /// Its Hugging Face form; null when it has none.
  const HfFamily* hf;
  /// One micro-batch's forward kernel by kernel on a rank (models/kernel_work.h), for planning
  /// a device not at hand; null: the planner uses flops_per_unit at the matmul rate.
  StageKernels (*kernels)(const ModelConfig& model, const KernelShape& shape);
};

/// The spec of model.arch.
const ModelSpec& model_spec(ModelKind kind);

/// Every family's spec, in the order errors list them (GPT, Llama, MLP).
std::vector<const ModelSpec*> model_specs();

}  // namespace triax
