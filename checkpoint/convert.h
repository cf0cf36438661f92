// defines: triax::FullModelState, triax::FullTensorSource, triax::read_full_state,
//          triax::full_state_of, triax::schedule_for_chunks, triax::write_sharded_checkpoint,
//          triax::cut_shard, triax::shard_views, triax::StateSource, triax::whole_model
//
// Offline conversions, on one process, between a sharded checkpoint and the whole model:
//   reshard  = read_full_state (every shard unsharded: tp slices concatenated, padding removed,
//              pipeline stages merged) + write_sharded_checkpoint at the new (tp, pp, chunks)
// The other formats (a PyTorch-readable file, Hugging Face folders) are interop/'s, built on
// these two.
// Optimizer moments are sharded exactly like their parameters, so they convert the same way.
// The target's shards are cut by building each target stage's model and asking its ShardSpecs,
// so the conversion uses the same slicing as training (no second copy of the rules).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/manifest.h"
#include "core/config.h"
#include "models/model_spec.h"

namespace triax {

struct FullModelState {
  Config config;     ///< the run's resolved configuration (layout fields as written)
  int64_t step = 0;  ///< optimizer steps done
  /// Full-model state names (checkpoint/state_name.h): "name" -> full parameter,
  /// "name@state" -> full optimizer state.
  std::map<std::string, torch::Tensor> tensors;
};

FullModelState read_full_state(const Manifest& manifest);

/// The tensors of one shard of `manifest`, in file order.
using ShardReader =
    std::function<std::vector<std::pair<std::string, torch::Tensor>>(const ShardEntry& shard)>;
/// read_full_state with the shards' tensors from `read` (files, or tensors another rank sent:
/// checkpoint/redistribute.h) and only the manifest's layout, configuration and parameter table.
FullModelState full_state_of(const Manifest& manifest, const ShardReader& read);

/// Where write_sharded_checkpoint takes the full tensors from: a FullModelState in memory, or a
/// converter that makes each tensor when asked (a Hugging Face import: checkpoint/hf_import.h),
/// so that writing holds one shard plus one full tensor, never the whole model.
class FullTensorSource {
 public:
  virtual ~FullTensorSource() = default;
  /// Full-model state names ("name", "name@state").
  virtual std::vector<std::string> names() const = 0;
  /// The full tensor (fp32, unpadded); may be a read-only view that the writer copies from.
  virtual torch::Tensor get(const std::string& name) const = 0;
  /// The writer has copied what it needs of `name` for now (a mapped source lets go of its pages).
  virtual void done(const std::string& /*name*/) const {}
};

/// The schedule a configuration keeps at `chunks` per rank: its own where it fits, else the one
/// that fits (interleaved or zbv at 1 chunk: 1f1b; zbv at more than 2: interleaved).
ScheduleKind schedule_for_chunks(ScheduleKind kind, int64_t chunks);

/// Writes OUT_ROOT/step_NNNNNNNN (shards, manifest) and OUT_ROOT/latest for the layout, with
/// stages placed as the configuration's schedule places them (a loop, or ZB-V's V).
std::string write_sharded_checkpoint(const Config& config, int64_t step,
                                     const FullTensorSource& source, int tensor, int pipeline,
                                     int chunks_per_rank, const std::string& out_root);
std::string write_sharded_checkpoint(const FullModelState& state, int tensor, int pipeline,
                                     int chunks_per_rank, const std::string& out_root);

/// The tensors of the (pp, tp) position of `config`'s layout (its tensor, pipeline, chunks and
/// schedule's placement, as a run loads them), cut from the full tensors of `source`; the
/// position's parameter table is added to `table` when given.
std::vector<std::pair<std::string, torch::Tensor>> cut_shard(const Config& config,
                                                             const FullTensorSource& source, int pp,
                                                             int tp,
                                                             std::vector<ParameterEntry>* table);
/// cut_shard for a position whose chunks are built already (a live Trainer's `chunks`, in chunk
/// order, holding whole parameters; `tensor` = its tp size): their names, shapes and splits,
/// rather than building them again. Unsplit tensors are `source`'s own (views): the caller
/// copies them into its model before the source goes.
std::vector<std::pair<std::string, torch::Tensor>> shard_views(
    const FullTensorSource& source, const std::vector<const torch::nn::Module*>& chunks, int tp,
    int tensor);
/// A FullModelState's tensors, as a source.
class StateSource : public FullTensorSource {
 public:
  explicit StateSource(const FullModelState& state) : state_(state) {}
  std::vector<std::string> names() const override;
  torch::Tensor get(const std::string& name) const override { return state_.tensors.at(name); }

 private:
  const FullModelState& state_;
};

/// The whole model (tp 1, pp 1, one chunk) holding `state`'s weights, in eval mode, on one
/// process (`single` is its tp group of one): generation and the interop tests.
std::unique_ptr<ModelChunk> whole_model(const FullModelState& state, Communicator& single);

}  // namespace triax
