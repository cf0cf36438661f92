#include "checkpoint/manifest.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "core/atomic_file.h"
#include "core/crc32.h"
#include "core/error.h"
#include "core/safetensors_map.h"
#include "core/strings.h"

namespace triax {
namespace {

namespace fs = std::filesystem;

void write_text_atomically(const std::string& path, const std::string& text) {
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

// --- the YAML spelling of each entry, written and read side by side ---

void emit(YAML::Emitter& out, const ShardEntry& s) {
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "file" << YAML::Value << fs::path(s.file).filename().string();
  out << YAML::Key << "pipeline_rank" << YAML::Value << s.pipeline_rank;
  out << YAML::Key << "tensor_rank" << YAML::Value << s.tensor_rank;
  out << YAML::Key << "bytes" << YAML::Value << s.bytes;
  out << YAML::Key << "crc32" << YAML::Value << s.crc32;
  out << YAML::EndMap;
}

ShardEntry shard_from(const YAML::Node& node, const std::string& dir) {
  ShardEntry s;
  s.file =
      dir.empty() ? node["file"].as<std::string>() : dir + "/" + node["file"].as<std::string>();
  s.pipeline_rank = node["pipeline_rank"].as<int>();
  s.tensor_rank = node["tensor_rank"].as<int>();
  s.bytes = node["bytes"].as<int64_t>();
  s.crc32 = node["crc32"].as<uint32_t>();
  return s;
}

void emit(YAML::Emitter& out, const ParameterEntry& p) {
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << p.name;
  out << YAML::Key << "stage" << YAML::Value << p.stage;
  out << YAML::Key << "shape" << YAML::Value << join(p.shape, "x");
  out << YAML::Key << "tp_split_dim" << YAML::Value << p.tp_split_dim;
  out << YAML::Key << "tp_split_stride" << YAML::Value << p.tp_split_stride;
  out << YAML::EndMap;
}

ParameterEntry parameter_from(const YAML::Node& node) {
  ParameterEntry p;
  p.name = node["name"].as<std::string>();
  p.stage = node["stage"].as<int64_t>();
  const std::string shape = node["shape"].as<std::string>();
  for (const std::string& size : split(shape, 'x')) {
    int64_t n = -1;
    const auto [end, error] = std::from_chars(size.data(), size.data() + size.size(), n);
    if (error != std::errc() || end != size.data() + size.size() || n < 0) {
      throw std::invalid_argument(str("parameter ", p.name, ": shape '", shape,
                                      "' is not sizes joined by 'x' (e.g. 768x3072)"));
    }
    p.shape.push_back(n);
  }
  p.tp_split_dim = node["tp_split_dim"].as<int64_t>();
  p.tp_split_stride = node["tp_split_stride"].as<int64_t>();
  return p;
}

}  // namespace

std::string step_folder(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%08lld", static_cast<long long>(step));
  return name;
}

std::string shard_name(int pp, int tp) {
  return str("pp", pp, "-tp", tp, ".safetensors");
}

void write_latest(const std::string& step_dir) {
  const fs::path dir(step_dir);
  write_text_atomically((dir.parent_path() / "latest").string(), dir.filename().string() + "\n");
}

std::string ShardRecord::encode() const {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "shard" << YAML::Value;
  emit(out, shard);
  out << YAML::Key << "parameters" << YAML::Value << YAML::BeginSeq;
  for (const ParameterEntry& p : parameters) emit(out, p);
  out << YAML::EndSeq << YAML::EndMap;
  return out.c_str();
}

ShardRecord ShardRecord::decode(const std::string& text) {
  const YAML::Node root = YAML::Load(text);
  ShardRecord record;
  record.shard = shard_from(root["shard"], "");
  for (const auto& node : root["parameters"]) record.parameters.push_back(parameter_from(node));
  return record;
}

void Manifest::write() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "format_version" << YAML::Value << kCheckpointFormatVersion;
  out << YAML::Key << "step" << YAML::Value << step;
  out << YAML::Key << "consumed_samples" << YAML::Value << consumed_samples;
  out << YAML::Key << "layout" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "tensor" << YAML::Value << tensor;
  out << YAML::Key << "pipeline" << YAML::Value << pipeline;
  out << YAML::Key << "chunks_per_rank" << YAML::Value << chunks_per_rank;
  out << YAML::Key << "data_written_at" << YAML::Value << data_written_at;
  out << YAML::EndMap;
  out << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "seed" << YAML::Value << seed;
  out << YAML::Key << "next_global_batch" << YAML::Value << step;
  out << YAML::Key << "rule" << YAML::Value
      << "global batch k = samples [k*B, (k+1)*B) of the epoch's permutation (seed + epoch)";
  out << YAML::EndMap;
  out << YAML::Key << "shards" << YAML::Value << YAML::BeginSeq;
  for (const ShardEntry& shard : shards) emit(out, shard);
  out << YAML::EndSeq;
  out << YAML::Key << "parameters" << YAML::Value << YAML::BeginSeq;
  for (const ParameterEntry& p : parameters) emit(out, p);
  out << YAML::EndSeq;
  out << YAML::Key << "config" << YAML::Value << YAML::Literal << to_yaml(config);
  out << YAML::EndMap;
  write_text_atomically(path(), std::string(out.c_str()) + "\n");
}

Manifest Manifest::read(const std::string& step_dir) {
  Manifest m;
  m.dir = step_dir;
  const std::string file = m.path();
  if (!fs::exists(file)) {
    throw ConfigError(str(file,
                          " is missing (a step folder without a manifest is an "
                          "interrupted save)"));
  }
  try {
    const YAML::Node root = YAML::LoadFile(file);
    m.format_version = root["format_version"].as<int>();
    if (m.format_version > kCheckpointFormatVersion) {
      throw ConfigError(str(file, ": checkpoint format version ", m.format_version,
                            " is newer than this triax reads (", kCheckpointFormatVersion,
                            "); use a newer triax"));
    }
    m.step = root["step"].as<int64_t>();
    m.consumed_samples = root["consumed_samples"].as<int64_t>();
    const YAML::Node layout = root["layout"];
    m.tensor = layout["tensor"].as<int64_t>();
    m.pipeline = layout["pipeline"].as<int64_t>();
    m.chunks_per_rank = layout["chunks_per_rank"].as<int64_t>();
    m.data_written_at = layout["data_written_at"].as<int64_t>();
    m.seed = root["data"]["seed"].as<int64_t>();
    m.config = parse_config(root["config"].as<std::string>(), {}, file);
    for (const auto& node : root["shards"]) m.shards.push_back(shard_from(node, step_dir));
    for (const auto& node : root["parameters"]) m.parameters.push_back(parameter_from(node));
  } catch (const YAML::Exception& e) {
    throw ConfigError(str(file, ": not a readable checkpoint manifest: ", e.what()));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(str(file, ": not a readable checkpoint manifest: ", e.what()));
  }
  return m;
}

void Manifest::verify() const {
  if (static_cast<int64_t>(shards.size()) != tensor * pipeline) {
    throw ConfigError(
        str(path(), ": lists ", shards.size(), " shards for tp ", tensor, " x pp ", pipeline));
  }
  for (const ShardEntry& shard : shards) {
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
    // A checksum proves the bytes are the ones written, not that they describe real tensors:
    // every rank checks every shard's header too (mapped, nothing read beyond it).
    try {
      const SafetensorsMap header(shard.file);
    } catch (const Error& e) {
      throw ConfigError(e.what());
    }
  }
}

const ParameterEntry& Manifest::parameter(const std::string& name) const {
  for (const ParameterEntry& p : parameters) {
    if (p.name == name) return p;
  }
  throw Error(str(path(), ": no parameter table entry for ", name));
}

}  // namespace triax
