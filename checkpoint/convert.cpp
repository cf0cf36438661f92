#include "checkpoint/convert.h"

#include <filesystem>

#include "checkpoint/parameter_table.h"
#include "checkpoint/state_name.h"
#include "core/crc32.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/strings.h"
#include "models/model_spec.h"
#include "parallel/tp/shard_spec.h"
#include "schedules/stage_placement.h"

namespace triax {
namespace {

namespace fs = std::filesystem;

// A tp group that exists only to give a model its rank and size while it is built: the
// converter builds stages to read their shard specs, and building communicates nothing.
class ShapeOnlyCommunicator : public Communicator {
 public:
  ShapeOnlyCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "none"; }
  WorkPtr all_reduce_async(torch::Tensor, ReduceOp) override { return fail(); }
  WorkPtr all_gather_async(torch::Tensor, torch::Tensor) override { return fail(); }
  WorkPtr reduce_scatter_async(torch::Tensor, torch::Tensor, ReduceOp) override { return fail(); }
  WorkPtr broadcast_async(torch::Tensor, int) override { return fail(); }
  WorkPtr isend(torch::Tensor, int, int) override { return fail(); }
  WorkPtr irecv(torch::Tensor, int, int) override { return fail(); }
  WorkPtr barrier_async() override { return fail(); }
  std::unique_ptr<Communicator> split(int, int) override { return nullptr; }

 private:
  static WorkPtr fail() { throw Error("checkpoint conversion: a model tried to communicate"); }
  int rank_, size_;
};

// The ShardSpec a parameter table entry describes (padding is not needed to unshard).
ShardSpec spec_of(const ParameterEntry& entry) {
  ShardSpec spec;
  spec.dim = entry.tp_split_dim;
  spec.stride = entry.tp_split_stride;
  spec.full_size = entry.shape[static_cast<size_t>(entry.tp_split_dim)];
  return spec;
}

// An optimizer's step counter is one number per parameter, never split.
bool split_like_parameter(const StateName& name) {
  return name.state != "step";
}

}  // namespace

std::vector<std::string> StateSource::names() const {
  std::vector<std::string> out;
  for (const auto& item : state_.tensors) out.push_back(item.first);
  return out;
}

FullModelState read_full_state(const Manifest& manifest) {
  return full_state_of(
      manifest, [](const ShardEntry& shard) { return load_safetensors(shard.file).tensors; });
}

FullModelState full_state_of(const Manifest& manifest, const ShardReader& read) {
  FullModelState state;
  state.config = manifest.config;
  state.step = manifest.step;
  // full name -> (lowest stage holding it, its shard per tp rank). A tied embedding's copy on the
  // last stage equals the first stage's; the first is taken.
  std::map<std::string, std::pair<int64_t, std::vector<torch::Tensor>>> found;
  const StagePlacement placement =
      StagePlacement::of(manifest.config.schedule.name, static_cast<int>(manifest.pipeline),
                         static_cast<int>(manifest.chunks_per_rank));
  for (const ShardEntry& shard : manifest.shards) {
    for (const auto& [key, tensor] : read(shard)) {
      const StateName name = StateName::parse(key);
      // Dropout streams belong to a (stage, tp rank) position; another layout starts new ones.
      if (name.rng) continue;
      const int64_t stage = placement.stage_of(static_cast<int>(shard.pipeline_rank), name.chunk);
      auto& entry = found[name.in_chunk(StateName::kNoChunk).str()];
      if (entry.second.empty() || stage < entry.first) {
        entry = {stage, std::vector<torch::Tensor>(static_cast<size_t>(manifest.tensor))};
      }
      if (stage == entry.first) entry.second[static_cast<size_t>(shard.tensor_rank)] = tensor;
    }
  }
  for (auto& [key, entry] : found) {
    const StateName name = StateName::parse(key);
    const ParameterEntry& table = manifest.parameter(name.parameter);
    const bool sharded = table.tp_split_dim >= 0 && split_like_parameter(name);
    state.tensors[key] = sharded ? unshard(entry.second, spec_of(table)) : entry.second[0];
  }
  return state;
}

ScheduleKind schedule_for_chunks(ScheduleKind kind, int64_t chunks) {
  if (chunks == 1) {
    const bool multi = kind == ScheduleKind::kInterleaved || kind == ScheduleKind::kZbv;
    return multi ? ScheduleKind::k1F1B : kind;
  }
  const bool fits =
      kind == ScheduleKind::kInterleaved || (kind == ScheduleKind::kZbv && chunks == 2);
  return fits ? kind : ScheduleKind::kInterleaved;
}

std::string write_sharded_checkpoint(const FullModelState& state, int tensor, int pipeline,
                                     int chunks_per_rank, const std::string& out_root) {
  return write_sharded_checkpoint(state.config, state.step, StateSource(state), tensor, pipeline,
                                  chunks_per_rank, out_root);
}

namespace {

// The configuration of the target layout: the source's, at tp x pp with `chunks_per_rank` (and a
// schedule that fits them), layers balanced over the new stages.
Config target_config(const Config& source, int tensor, int pipeline, int chunks_per_rank) {
  Config config = source;
  config.parallel.tensor = tensor;
  config.parallel.pipeline = pipeline;
  config.parallel.data = 0;
  config.schedule.chunks_per_rank = chunks_per_rank;
  config.schedule.name = schedule_for_chunks(config.schedule.name, chunks_per_rank);
  config.schedule.layer_boundaries.clear();
  return config;
}

// What the writer needs of one chunk: its parameters' names and shapes and how each is split,
// from the chunk as training builds it (dropped before any tensor is copied, so the writer holds
// one shard plus one full tensor).
struct ChunkLayout {
  std::vector<std::pair<std::string, std::vector<int64_t>>> parameters;
  std::map<std::string, ShardSpec> specs;
};

ChunkLayout layout_of(const torch::nn::Module& module) {
  ChunkLayout layout;
  layout.specs = collect_shard_specs(module);
  for (const auto& item : module.named_parameters()) {
    layout.parameters.emplace_back(item.key(), item.value().sizes().vec());
  }
  return layout;
}

// parameter name -> the full-model names of its tensors (itself and its optimizer state)
std::multimap<std::string, std::string> names_by_parameter(const FullTensorSource& source) {
  std::multimap<std::string, std::string> out;
  for (const std::string& name : source.names()) {
    out.emplace(StateName::parse(name).parameter, name);
  }
  return out;
}

// Appends to `shard` chunk c's tensors for tp rank `tp`: each parameter and its optimizer state,
// sliced as its ShardSpec says; whole ones copied unless `views` (the caller copies them before
// the source goes).
void add_chunk_tensors(const ChunkLayout& layout, int c, int tp, int tensor,
                       const FullTensorSource& source,
                       const std::multimap<std::string, std::string>& by_parameter, bool views,
                       SafetensorsFile& shard) {
  for (const auto& [parameter, shape] : layout.parameters) {
    const auto split = layout.specs.find(parameter);
    const auto range = by_parameter.equal_range(parameter);
    TRIAX_CHECK(range.first != range.second, "the source has no parameter ", parameter);
    for (auto entry = range.first; entry != range.second; ++entry) {
      const StateName name = StateName::parse(entry->second);
      const torch::Tensor full = source.get(entry->second);
      // (An optimizer's step counter is one number, whatever the parameter's shape.)
      TRIAX_CHECK(
          full.sizes().vec() == shape || split != layout.specs.end() || name.is_optimizer_state(),
          entry->second, ": the source's shape ", full.sizes(), " is not the model's [",
          join(shape, ", "), "]");
      // (At tp 1 an unpadded split is the whole tensor: a view needs no cut.)
      const bool sharded =
          split != layout.specs.end() && split_like_parameter(name) &&
          !(views && tensor == 1 && split->second.padded_size == split->second.full_size &&
            full.size(split->second.dim) == split->second.full_size);
      // Unless views are asked for, a copy: the source's tensor may be a view of a mapped file or
      // of a bigger tensor.
      shard.tensors.emplace_back(name.in_chunk(c).str(),
                                 sharded ? shard_of(full, split->second, tp, tensor)
                                 : views ? full
                                         : full.contiguous().clone());
      source.done(entry->second);
    }
  }
}

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> cut_shard(const Config& config,
                                                             const FullTensorSource& source, int pp,
                                                             int tp,
                                                             std::vector<ParameterEntry>* table) {
  const int tensor = static_cast<int>(config.parallel.tensor);
  const int chunks_per_rank = static_cast<int>(config.schedule.chunks_per_rank);
  const StagePlacement placement = StagePlacement::of(
      config.schedule.name, static_cast<int>(config.parallel.pipeline), chunks_per_rank);
  const ModelSpec& spec = model_spec(config.model.arch);
  spec.check_layout(config);
  const auto ranges = spec.stage_layers(config);
  const std::multimap<std::string, std::string> by_parameter = names_by_parameter(source);
  ShapeOnlyCommunicator group(tp, tensor);
  SafetensorsFile shard;
  for (int c = 0; c < chunks_per_rank; ++c) {
    const int stage = placement.stage_of(pp, c);
    ChunkLayout layout;
    {
      const std::unique_ptr<ModelChunk> part = spec.build_chunk(config, stage, ranges, group);
      layout = layout_of(part->module());
      if (table != nullptr) {
        const auto entries = parameter_table(part->module(), stage);
        table->insert(table->end(), entries.begin(), entries.end());
      }
    }
    add_chunk_tensors(layout, c, tp, tensor, source, by_parameter, false, shard);
  }
  return std::move(shard.tensors);
}

std::vector<std::pair<std::string, torch::Tensor>> shard_views(
    const FullTensorSource& source, const std::vector<const torch::nn::Module*>& chunks, int tp,
    int tensor) {
  const std::multimap<std::string, std::string> by_parameter = names_by_parameter(source);
  SafetensorsFile shard;
  for (size_t c = 0; c < chunks.size(); ++c) {
    add_chunk_tensors(layout_of(*chunks[c]), static_cast<int>(c), tp, tensor, source, by_parameter,
                      true, shard);
  }
  return std::move(shard.tensors);
}

std::string write_sharded_checkpoint(const Config& source_config, int64_t step,
                                     const FullTensorSource& source, int tensor, int pipeline,
                                     int chunks_per_rank, const std::string& out_root) {
  const Config config = target_config(source_config, tensor, pipeline, chunks_per_rank);
  Manifest manifest;
  manifest.dir = out_root + "/" + step_folder(step);
  manifest.step = step;
  manifest.consumed_samples = step * config.train.global_batch;
  manifest.tensor = tensor;
  manifest.pipeline = pipeline;
  manifest.chunks_per_rank = chunks_per_rank;
  manifest.data_written_at = 0;  // not written by a run
  manifest.seed = config.train.seed;
  manifest.config = config;
  fs::remove_all(manifest.dir);
  fs::create_directories(manifest.dir);
  for (int pp = 0; pp < pipeline; ++pp) {
    for (int tp = 0; tp < tensor; ++tp) {
      SafetensorsFile shard;
      shard.metadata = {{"format", "triax-checkpoint-shard"}, {"step", std::to_string(step)}};
      shard.tensors = cut_shard(config, source, pp, tp, tp == 0 ? &manifest.parameters : nullptr);
      ShardEntry info;
      info.file = manifest.dir + "/" + shard_name(pp, tp);
      info.pipeline_rank = pp;
      info.tensor_rank = tp;
      save_safetensors(info.file, shard);
      info.crc32 = file_crc32(info.file, &info.bytes);
      manifest.shards.push_back(info);
    }
  }
  manifest.write();
  write_latest(manifest.dir);
  return manifest.dir;
}

std::unique_ptr<ModelChunk> whole_model(const FullModelState& state, Communicator& single) {
  Config config = state.config;
  config.parallel.tensor = 1;
  config.parallel.pipeline = 1;
  config.schedule.chunks_per_rank = 1;
  config.schedule.layer_boundaries.clear();
  const ModelSpec& spec = model_spec(config.model.arch);
  std::unique_ptr<ModelChunk> model =
      spec.build_chunk(config, 0, spec.stage_layers(config), single);
  torch::NoGradGuard no_grad;
  for (auto& item : model->module().named_parameters()) {
    const auto it = state.tensors.find(item.key());
    TRIAX_CHECK(it != state.tensors.end(), "the checkpoint has no parameter ", item.key());
    item.value().copy_(it->second);
  }
  model->module().eval();
  return model;
}

}  // namespace triax
