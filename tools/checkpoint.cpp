#include "tools/checkpoint.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/crc32.h"
#include "core/error.h"
#include "core/fault_point.h"
#include "core/log.h"
#include "core/safetensors.h"
#include "parallel/gather_text.h"
#include "parallel/shard_spec.h"

namespace triax {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string step_folder(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%08lld", static_cast<long long>(step));
  return name;
}

std::string shard_name(int pp, int tp) {
  return str("pp", pp, "-tp", tp, ".safetensors");
}

namespace {

void write_text_atomically(const std::string& path, const std::string& text) {
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

// One line per parameter of this rank's chunks: "name stage dim0xdim1 split_dim split_stride".
std::string parameter_table(GptTrainer& trainer, ParallelContext& context) {
  std::ostringstream out;
  const int p = context.pp_size();
  for (size_t c = 0; c < trainer.chunks().size(); ++c) {
    Gpt& chunk = trainer.chunks()[c];
    const auto specs = collect_shard_specs(*chunk);
    for (const auto& item : chunk->named_parameters()) {
      std::vector<int64_t> shape = item.value().sizes().vec();
      int64_t dim = -1, stride = 1;
      const auto spec = specs.find(item.key());
      if (spec != specs.end()) {
        dim = spec->second.dim;
        stride = spec->second.stride;
        shape[static_cast<size_t>(dim)] = spec->second.full_size;
      }
      out << item.key() << " " << static_cast<int>(c) * p + context.pp_rank() << " "
          << join(shape, "x") << " " << dim << " " << stride << "\n";
    }
  }
  return out.str();
}

void prune(const std::string& root, int64_t keep) {
  if (keep <= 0) return;
  std::vector<std::string> complete;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) == 0 && fs::exists(entry.path() / "manifest.yaml")) {
      complete.push_back(name);
    }
  }
  std::sort(complete.begin(), complete.end());
  for (size_t i = 0; i + static_cast<size_t>(keep) < complete.size(); ++i) {
    fs::remove_all(fs::path(root) / complete[i]);
  }
}

}  // namespace

void write_checkpoint_manifest(const CheckpointManifest& m,
                               const std::vector<std::string>& parameters, const Config& config) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "format_version" << YAML::Value << kCheckpointFormatVersion;
  out << YAML::Key << "step" << YAML::Value << m.step;
  out << YAML::Key << "consumed_samples" << YAML::Value << m.consumed_samples;
  out << YAML::Key << "layout" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "tensor" << YAML::Value << m.tensor;
  out << YAML::Key << "pipeline" << YAML::Value << m.pipeline;
  out << YAML::Key << "chunks_per_rank" << YAML::Value << m.chunks_per_rank;
  out << YAML::Key << "data_written_at" << YAML::Value << m.data_written_at;
  out << YAML::EndMap;
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "seed" << YAML::Value << config.train.seed;
  out << YAML::Key << "next_global_batch" << YAML::Value << m.step;
  out << YAML::Key << "rule" << YAML::Value
      << "global batch k = samples [k*B, (k+1)*B) of the epoch's permutation (seed + epoch)";
  out << YAML::EndMap;
  out << YAML::Key << "shards" << YAML::Value << YAML::BeginSeq;
  for (const CheckpointShard& shard : m.shards) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "file" << YAML::Value
        << fs::path(shard.file).filename().string() << YAML::Key << "pipeline_rank" << YAML::Value
        << shard.pipeline_rank << YAML::Key << "tensor_rank" << YAML::Value << shard.tensor_rank
        << YAML::Key << "bytes" << YAML::Value << shard.bytes << YAML::Key << "crc32" << YAML::Value
        << shard.crc32 << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "parameters" << YAML::Value << YAML::BeginSeq;
  for (const std::string& line : parameters) {
    std::istringstream fields(line);
    std::string name, shape;
    int64_t stage = 0, dim = 0, stride = 1;
    fields >> name >> stage >> shape >> dim >> stride;
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << name << YAML::Key
        << "stage" << YAML::Value << stage << YAML::Key << "shape" << YAML::Value << shape
        << YAML::Key << "tp_split_dim" << YAML::Value << dim << YAML::Key << "tp_split_stride"
        << YAML::Value << stride << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "config" << YAML::Value << YAML::Literal << to_yaml(config);
  out << YAML::EndMap;
  const std::string root = fs::path(m.dir).parent_path().string();
  fault_point("checkpoint-before-manifest", m.step);
  write_text_atomically(m.dir + "/manifest.yaml", std::string(out.c_str()) + "\n");
  fault_point("checkpoint-before-latest", m.step);
  write_text_atomically(root + "/latest", fs::path(m.dir).filename().string() + "\n");
}

std::string checkpoint_root(const Config& config) {
  if (!config.checkpoint.dir.empty()) return config.checkpoint.dir;
  return config.run.dir.empty() ? "" : config.run.dir + "/checkpoints";
}

std::string resolve_resume_spec(const std::string& spec, const Config& config) {
  if (spec != "auto") return spec;
  const std::string root = checkpoint_root(config);
  if (root.empty()) {
    throw ConfigError("--resume auto: no checkpoint folder (set checkpoint.dir or run.dir)");
  }
  if (fs::exists(root + "/latest")) return "latest";
  log::info(str("--resume auto: no checkpoint in ", root, " yet; starting from step 0"));
  return "";
}

std::string save_checkpoint(GptTrainer& trainer, ParallelContext& context, const Config& config,
                            int64_t step) {
  const std::string root = checkpoint_root(config);
  TRIAX_CHECK(!root.empty(), "checkpoint: set checkpoint.dir or run.dir");
  const std::string dir = root + "/" + step_folder(step);
  Communicator& world = context.world();
  if (context.rank() == 0) {
    fs::remove_all(dir);  // an interrupted save of this step
    fs::create_directories(dir);
  }
  world.barrier();
  std::string mine;
  if (context.dp_rank() == 0) {
    SafetensorsFile shard;
    shard.tensors = trainer.state_tensors();
    shard.metadata = {{"format", "triax-checkpoint-shard"},
                      {"step", std::to_string(step)},
                      {"pipeline_rank", std::to_string(context.pp_rank())},
                      {"tensor_rank", std::to_string(context.tp_rank())}};
    const std::string file = shard_name(context.pp_rank(), context.tp_rank());
    save_safetensors(dir + "/" + file, shard);
    fault_point("checkpoint-shard-written", step);
    int64_t bytes = 0;
    const uint32_t crc = file_crc32(dir + "/" + file, &bytes);
    mine = str("shard ", file, " ", context.pp_rank(), " ", context.tp_rank(), " ", bytes, " ", crc,
               "\n", parameter_table(trainer, context));
  }
  const std::vector<std::string> parts = all_gather_text(world, mine);
  if (context.rank() == 0) {
    std::vector<CheckpointShard> shards;
    std::vector<std::string> parameters;
    for (const std::string& part : parts) {
      if (part.empty()) continue;
      std::istringstream lines(part);
      std::string tag;
      CheckpointShard shard;
      lines >> tag >> shard.file >> shard.pipeline_rank >> shard.tensor_rank >> shard.bytes >>
          shard.crc32;
      shards.push_back(shard);
      std::string line;
      std::getline(lines, line);
      while (std::getline(lines, line)) {
        if (shard.tensor_rank == 0 && !line.empty()) parameters.push_back(line);  // once per name
      }
    }
    CheckpointManifest manifest;
    manifest.dir = dir;
    manifest.step = step;
    manifest.consumed_samples = step * config.train.global_batch;
    manifest.tensor = context.tp_size();
    manifest.pipeline = context.pp_size();
    manifest.chunks_per_rank = trainer.schedule().chunks;
    manifest.data_written_at = context.dp_size();
    manifest.shards = shards;
    write_checkpoint_manifest(manifest, parameters, config);
    prune(root, config.checkpoint.keep);
  }
  world.barrier();
  return dir;
}

CheckpointManifest read_checkpoint_files(const std::string& spec, const std::string& root) {
  std::string dir = spec;
  if (spec == "latest") {
    if (root.empty()) {
      throw ConfigError("--resume latest: no checkpoint folder (set checkpoint.dir or run.dir)");
    }
    dir = root;
  }
  if (!fs::exists(dir + "/manifest.yaml") && fs::exists(dir + "/latest")) {
    std::ifstream latest(dir + "/latest");
    std::string name;
    latest >> name;
    dir = dir + "/" + name;
  }
  const std::string manifest_path = dir + "/manifest.yaml";
  if (!fs::exists(manifest_path)) {
    throw ConfigError(str("checkpoint ", spec, ": ", manifest_path,
                          " is missing (valid: a checkpoint step folder, a checkpoint folder "
                          "holding `latest`, or `latest`; a step folder without a manifest is "
                          "an interrupted save)"));
  }
  CheckpointManifest m;
  m.dir = dir;
  try {
    const YAML::Node root = YAML::LoadFile(manifest_path);
    m.format_version = root["format_version"].as<int>();
    if (m.format_version > kCheckpointFormatVersion) {
      throw ConfigError(str(manifest_path, ": checkpoint format version ", m.format_version,
                            " is newer than this triax reads (", kCheckpointFormatVersion,
                            "); use a newer triax"));
    }
    m.step = root["step"].as<int64_t>();
    m.consumed_samples = root["consumed_samples"].as<int64_t>();
    m.tensor = root["layout"]["tensor"].as<int64_t>();
    m.pipeline = root["layout"]["pipeline"].as<int64_t>();
    m.chunks_per_rank = root["layout"]["chunks_per_rank"].as<int64_t>();
    m.data_written_at = root["layout"]["data_written_at"].as<int64_t>();
    m.config = parse_config(root["config"].as<std::string>(), {}, manifest_path);
    for (const auto& node : root["shards"]) {
      CheckpointShard shard;
      shard.file = dir + "/" + node["file"].as<std::string>();
      shard.pipeline_rank = node["pipeline_rank"].as<int>();
      shard.tensor_rank = node["tensor_rank"].as<int>();
      shard.bytes = node["bytes"].as<int64_t>();
      shard.crc32 = node["crc32"].as<uint32_t>();
      m.shards.push_back(shard);
    }
  } catch (const YAML::Exception& e) {
    throw ConfigError(str(manifest_path, ": not a readable checkpoint manifest: ", e.what()));
  }
  if (static_cast<int64_t>(m.shards.size()) != m.tensor * m.pipeline) {
    throw ConfigError(str(manifest_path, ": lists ", m.shards.size(), " shards for tp ", m.tensor,
                          " x pp ", m.pipeline));
  }
  for (const CheckpointShard& shard : m.shards) {
    if (!fs::exists(shard.file)) throw ConfigError(str(shard.file, ": shard file is missing"));
    int64_t bytes = 0;
    const uint32_t crc = file_crc32(shard.file, &bytes);
    if (bytes != shard.bytes) {
      throw ConfigError(str(shard.file, ": ", bytes, " bytes, the manifest says ", shard.bytes,
                            " (truncated or overwritten)"));
    }
    if (crc != shard.crc32) {
      throw ConfigError(str(shard.file, ": checksum mismatch (CRC-32 ", crc, ", the manifest says ",
                            shard.crc32, "): the shard is corrupt"));
    }
  }
  return m;
}

namespace {

// The keys that shape the saved tensors, other than the layout: a run may change anything else
// (lr, steps, dropout, ...) on resume, not these.
void check_same_model(const Config& saved, const Config& config, const std::string& dir) {
  std::vector<std::string> differ;
  const auto compare = [&](const char* key, const auto& was, const auto& now) {
    if (was != now) differ.push_back(str(key, " was ", was, ", now ", now));
  };
  const ModelConfig &a = saved.model, &b = config.model;
  compare("model.arch", a.arch, b.arch);
  compare("model.hidden", a.hidden, b.hidden);
  compare("model.heads", a.heads, b.heads);
  compare("model.layers", a.layers, b.layers);
  compare("model.seq_len", a.seq_len, b.seq_len);
  compare("model.vocab", a.vocab, b.vocab);
  compare("model.tie_embeddings", std::string(a.tie_embeddings ? "true" : "false"),
          std::string(b.tie_embeddings ? "true" : "false"));
  compare("train.optimizer", saved.train.optimizer, config.train.optimizer);
  // Which stage holds which layer (the shards are per stage).
  compare("schedule.layer_boundaries", str("[", join(saved.schedule.layer_boundaries, ", "), "]"),
          str("[", join(config.schedule.layer_boundaries, ", "), "]"));
  if (differ.empty()) return;
  throw ConfigError(str(
      "checkpoint ", dir, " holds another model or optimizer: ", join(differ, "; "),
      " (valid: the checkpoint's values; ", dir, "/manifest.yaml has its whole configuration)"));
}

}  // namespace

CheckpointManifest read_checkpoint(const std::string& spec, const Config& config) {
  CheckpointManifest m = read_checkpoint_files(spec, checkpoint_root(config));
  const std::string dir = m.dir;
  check_same_model(m.config, config, dir);
  if (m.tensor != config.parallel.tensor || m.pipeline != config.parallel.pipeline ||
      m.chunks_per_rank != config.schedule.chunks_per_rank) {
    throw ConfigError(str(
        "--resume ", spec, ": the checkpoint was written at parallel.tensor=", m.tensor,
        " parallel.pipeline=", m.pipeline, " schedule.chunks_per_rank=", m.chunks_per_rank,
        ", this run has tensor=", config.parallel.tensor, " pipeline=", config.parallel.pipeline,
        " chunks_per_rank=", config.schedule.chunks_per_rank,
        " (tp and pp shape the saved weights; dp may differ). Convert it first: triax reshard ",
        dir, " --tensor ", config.parallel.tensor, " --pipeline ", config.parallel.pipeline,
        " --out NEW_DIR"));
  }
  return m;
}

void load_checkpoint(GptTrainer& trainer, ParallelContext& context,
                     const CheckpointManifest& manifest) {
  for (const CheckpointShard& shard : manifest.shards) {
    if (shard.pipeline_rank != context.pp_rank() || shard.tensor_rank != context.tp_rank()) {
      continue;
    }
    const SafetensorsFile file = load_safetensors(shard.file);
    std::map<std::string, torch::Tensor> tensors(file.tensors.begin(), file.tensors.end());
    trainer.load_state_tensors(tensors);
    return;
  }
  throw Error(str(manifest.dir, ": no shard for pipeline rank ", context.pp_rank(), " tensor rank ",
                  context.tp_rank()));
}

}  // namespace triax
