#include "tools/checkpoint_convert.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <sstream>

#include "core/crc32.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "models/gpt.h"
#include "models/gpt_stages.h"
#include "parallel/shard_spec.h"

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

struct SplitRule {
  int64_t dim = -1;
  int64_t stride = 1;
  int64_t full_size = 0;
};

std::map<std::string, SplitRule> split_rules(const std::string& manifest_path) {
  std::map<std::string, SplitRule> rules;
  const YAML::Node root = YAML::LoadFile(manifest_path);
  for (const auto& p : root["parameters"]) {
    SplitRule rule;
    rule.dim = p["tp_split_dim"].as<int64_t>();
    rule.stride = p["tp_split_stride"].as<int64_t>();
    if (rule.dim >= 0) {
      const auto shape = split(p["shape"].as<std::string>(), 'x');
      rule.full_size = std::stoll(shape[static_cast<size_t>(rule.dim)]);
    }
    rules[p["name"].as<std::string>()] = rule;
  }
  return rules;
}

// The inverse of shard_of: tp shards (each `stride` blocks along dim) -> the full tensor.
torch::Tensor unshard(const std::vector<torch::Tensor>& shards, const SplitRule& rule) {
  const auto dim = rule.dim;
  const int64_t chunk = shards[0].size(dim) / rule.stride;
  std::vector<torch::Tensor> pieces;
  for (int64_t b = 0; b < rule.stride; ++b) {
    for (const auto& shard : shards) pieces.push_back(shard.narrow(dim, b * chunk, chunk));
  }
  return torch::cat(pieces, dim).narrow(dim, 0, rule.full_size).contiguous();
}

std::string base_name(const std::string& key) {
  return key.substr(0, key.find('@'));
}

}  // namespace

FullModelState read_full_state(const CheckpointManifest& manifest) {
  FullModelState state;
  const std::string manifest_path = manifest.dir + "/manifest.yaml";
  state.config = manifest.config;
  state.step = manifest.step;
  const auto rules = split_rules(manifest_path);
  // key -> (lowest stage holding it, its shard per tp rank). A tied embedding's copy on the last
  // stage equals the first stage's; the first is taken.
  std::map<std::string, std::pair<int64_t, std::vector<torch::Tensor>>> found;
  for (const CheckpointShard& shard : manifest.shards) {
    const SafetensorsFile file = load_safetensors(shard.file);
    for (const auto& [name, tensor] : file.tensors) {
      // Dropout streams belong to a (stage, tp rank) position; another layout starts new ones.
      if (name.rfind("rng/", 0) == 0) continue;
      const auto slash = name.find('/');
      const int64_t chunk = std::stoll(name.substr(1, slash - 1));
      const int64_t stage = chunk * manifest.pipeline + shard.pipeline_rank;
      const std::string key = name.substr(slash + 1);
      auto& entry = found[key];
      if (entry.second.empty() || stage < entry.first) {
        entry = {stage, std::vector<torch::Tensor>(static_cast<size_t>(manifest.tensor))};
      }
      if (stage == entry.first) entry.second[static_cast<size_t>(shard.tensor_rank)] = tensor;
    }
  }
  for (auto& [key, entry] : found) {
    const auto rule = rules.find(base_name(key));
    TRIAX_CHECK(rule != rules.end(), manifest_path, ": no parameter table entry for ", key);
    const bool sharded = rule->second.dim >= 0 && key.find("@step") == std::string::npos;
    state.tensors[key] = sharded ? unshard(entry.second, rule->second) : entry.second[0];
  }
  return state;
}

std::string write_sharded_checkpoint(const FullModelState& state, int tensor, int pipeline,
                                     int chunks_per_rank, const std::string& out_root) {
  Config config = state.config;
  config.parallel.tensor = tensor;
  config.parallel.pipeline = pipeline;
  config.parallel.data = 0;
  config.schedule.chunks_per_rank = chunks_per_rank;
  if (chunks_per_rank == 1 && config.schedule.name == "interleaved") config.schedule.name = "1f1b";
  config.schedule.layer_boundaries.clear();  // balanced over the new stages
  check_gpt_layout(config);
  const GptOptions whole =
      GptOptions::from_config(config.model, static_cast<uint64_t>(config.train.seed));
  const auto ranges = split_layers(whole.layers, pipeline * chunks_per_rank, {});
  CheckpointManifest manifest;
  manifest.dir = out_root + "/" + step_folder(state.step);
  manifest.step = state.step;
  manifest.consumed_samples = state.step * config.train.global_batch;
  manifest.tensor = tensor;
  manifest.pipeline = pipeline;
  manifest.chunks_per_rank = chunks_per_rank;
  manifest.data_written_at = 0;  // not written by a run
  fs::remove_all(manifest.dir);
  fs::create_directories(manifest.dir);
  std::vector<std::string> parameters;
  std::multimap<std::string, std::string> by_parameter;  // parameter name -> its tensors' keys
  for (const auto& item : state.tensors) by_parameter.emplace(base_name(item.first), item.first);
  for (int pp = 0; pp < pipeline; ++pp) {
    for (int tp = 0; tp < tensor; ++tp) {
      ShapeOnlyCommunicator group(tp, tensor);
      SafetensorsFile shard;
      shard.metadata = {{"format", "triax-checkpoint-shard"}, {"step", std::to_string(state.step)}};
      for (int c = 0; c < chunks_per_rank; ++c) {
        const int stage = c * pipeline + pp;
        Gpt part(gpt_stage_options(whole, stage, ranges), group);
        const auto specs = collect_shard_specs(*part);
        for (const auto& item : part->named_parameters()) {
          const auto spec = specs.find(item.key());
          const auto range = by_parameter.equal_range(item.key());
          for (auto entry = range.first; entry != range.second; ++entry) {
            const std::string& key = entry->second;
            const torch::Tensor& full = state.tensors.at(key);
            const bool sharded = spec != specs.end() && key.find("@step") == std::string::npos;
            shard.tensors.emplace_back(str("c", c, "/", key),
                                       sharded ? shard_of(full, spec->second, tp, tensor) : full);
          }
          const auto it = state.tensors.find(item.key());
          TRIAX_CHECK(it != state.tensors.end(), "the model has no parameter ", item.key());
          if (tp == 0) {
            std::vector<int64_t> shape = it->second.sizes().vec();
            parameters.push_back(str(item.key(), " ", stage, " ", join(shape, "x"), " ",
                                     spec == specs.end() ? -1 : spec->second.dim, " ",
                                     spec == specs.end() ? 1 : spec->second.stride));
          }
        }
      }
      CheckpointShard info;
      info.file = manifest.dir + "/" + shard_name(pp, tp);
      info.pipeline_rank = pp;
      info.tensor_rank = tp;
      save_safetensors(info.file, shard);
      info.crc32 = file_crc32(info.file, &info.bytes);
      manifest.shards.push_back(info);
    }
  }
  write_checkpoint_manifest(manifest, parameters, config);
  return manifest.dir;
}

void export_full_model(const FullModelState& state, const std::string& path) {
  SafetensorsFile file;
  for (const auto& [key, tensor] : state.tensors) {
    if (key.find('@') == std::string::npos) file.tensors.emplace_back(key, tensor);
  }
  const ModelConfig& m = state.config.model;
  file.metadata = {{"format", "triax-full-model"},
                   {"vocab", std::to_string(m.vocab)},
                   {"hidden", std::to_string(m.hidden)},
                   {"heads", std::to_string(m.heads)},
                   {"layers", std::to_string(m.layers)},
                   {"seq_len", std::to_string(m.seq_len)},
                   {"tie_embeddings", m.tie_embeddings ? "true" : "false"},
                   {"step", std::to_string(state.step)},
                   {"config", to_yaml(state.config)}};
  save_safetensors(path, file);
}

FullModelState import_full_model(const std::string& path) {
  const SafetensorsFile file = load_safetensors(path);
  const auto config = file.metadata.find("config");
  if (config == file.metadata.end()) {
    throw ConfigError(str(path, ": no `config` metadata (valid: a file written by triax export)"));
  }
  FullModelState state;
  state.config = parse_config(config->second, {}, path);
  for (const auto& [name, tensor] : file.tensors) state.tensors[name] = tensor;
  return state;  // step 0: weights only, the optimizer starts fresh
}

}  // namespace triax
