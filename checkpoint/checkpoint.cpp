#include "checkpoint/checkpoint.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>

#include "checkpoint/location.h"
#include "core/crc32.h"
#include "core/error.h"
#include "core/fault_point.h"
#include "core/safetensors.h"
#include "parallel/comm/gather_text.h"

namespace triax {
namespace {

namespace fs = std::filesystem;

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

std::string begin_checkpoint(ParallelContext& context, const Config& config, int64_t step) {
  const std::string root = checkpoint_root(config);
  TRIAX_CHECK(!root.empty(), "checkpoint: set checkpoint.dir or run.dir");
  const std::string dir = root + "/" + step_folder(step);
  if (context.rank() == 0) {
    fs::remove_all(dir);  // an interrupted save of this step
    fs::create_directories(dir);
  }
  context.world().barrier();
  return dir;
}

std::vector<std::pair<std::string, torch::Tensor>> materialize(CheckpointContents contents) {
  std::map<std::string, torch::Tensor> streamed;
  if (contents.stream) {
    contents.stream([&](const std::string& name, const torch::Tensor& value) {
      streamed[name] = value.clone();
    });
  }
  for (auto& [name, tensor] : contents.tensors) {
    if (!tensor.is_meta()) continue;
    const auto it = streamed.find(name);
    TRIAX_CHECK(it != streamed.end(), "checkpoint contents: nothing streamed for ", name);
    tensor = it->second;
  }
  return std::move(contents.tensors);
}

ShardRecord write_checkpoint_shard(const ShardTarget& target, CheckpointContents contents) {
  const std::map<std::string, std::string> metadata = {
      {"format", "triax-checkpoint-shard"},
      {"step", std::to_string(target.step)},
      {"pipeline_rank", std::to_string(target.pipeline_rank)},
      {"tensor_rank", std::to_string(target.tensor_rank)}};
  ShardRecord record;
  record.shard.file = target.dir + "/" + shard_name(target.pipeline_rank, target.tensor_rank);
  record.shard.pipeline_rank = target.pipeline_rank;
  record.shard.tensor_rank = target.tensor_rank;
  stall_point("checkpoint-shard", target.step);
  {
    // A failure to write (an unwritable folder, a tensor that differs from the header) still
    // lets the stream run to its end, so the other dp ranks' gathers complete; it is raised after.
    std::optional<SafetensorsWriter> out;
    std::exception_ptr failed;
    const auto attempt = [&](const std::function<void()>& write) {
      if (failed) return;
      try {
        write();
      } catch (...) {
        failed = std::current_exception();
      }
    };
    attempt([&] {
      out.emplace(record.shard.file, contents.tensors, metadata);
      for (const auto& [name, tensor] : contents.tensors) {
        if (!tensor.is_meta()) out->write(name, tensor);
      }
    });
    // The rest arrives a bucket at a time and is written where the header put it.
    if (contents.stream) {
      contents.stream([&](const std::string& name, const torch::Tensor& value) {
        attempt([&] { out->write(name, value); });
      });
    }
    if (failed) std::rethrow_exception(failed);
    out->commit();
  }
  fault_point("checkpoint-shard-written", target.step);
  record.shard.crc32 = file_crc32(record.shard.file, &record.shard.bytes);
  record.parameters = std::move(contents.parameters);
  return record;
}

void stream_checkpoint_shard(CheckpointContents contents) {
  if (contents.stream) contents.stream([](const std::string&, const torch::Tensor&) {});
}

void complete_checkpoint(ParallelContext& context, const Config& config, const ShardTarget& target,
                         const CheckpointLayout& layout, const std::string& mine) {
  const std::vector<std::string> records = all_gather_text(context.world(), mine);
  if (context.rank() != 0) return;
  Manifest manifest;
  manifest.dir = target.dir;
  manifest.step = target.step;
  manifest.consumed_samples = target.step * layout.global_batch;
  manifest.tensor = context.tp_size();
  manifest.pipeline = context.pp_size();
  manifest.chunks_per_rank = layout.chunks_per_rank;
  manifest.data_written_at = context.dp_size();
  manifest.seed = config.train.seed;
  manifest.config = config;
  for (const std::string& text : records) {
    if (text.empty()) continue;  // not a writer
    ShardRecord record = ShardRecord::decode(text);
    // Every tp rank of a stage lists the same parameters: keep tp rank 0's.
    if (record.shard.tensor_rank == 0) {
      manifest.parameters.insert(manifest.parameters.end(), record.parameters.begin(),
                                 record.parameters.end());
    }
    manifest.shards.push_back(record.shard);
  }
  fault_point("checkpoint-before-manifest", target.step);
  manifest.write();
  fault_point("checkpoint-before-latest", target.step);
  write_latest(target.dir);
  prune(checkpoint_root(config), config.checkpoint.keep);
}

ShardTarget shard_target(ParallelContext& context, const std::string& dir, int64_t step) {
  return ShardTarget{dir, step, context.pp_rank(), context.tp_rank()};
}

std::string save_checkpoint(ParallelContext& context, const Config& config, int64_t step,
                            const CheckpointLayout& layout,
                            const std::function<CheckpointContents()>& contents) {
  const ShardTarget target = shard_target(context, begin_checkpoint(context, config, step), step);
  std::string mine;
  if (context.replica().rank() == 0) {  // one writer per (tp, pp): dp and cp rank 0
    mine = write_checkpoint_shard(target, contents()).encode();
  } else {
    stream_checkpoint_shard(contents());
  }
  complete_checkpoint(context, config, target, layout, mine);
  context.world().barrier();
  return target.dir;
}

std::map<std::string, torch::Tensor> load_checkpoint_shard(const Manifest& manifest, int pp_rank,
                                                           int tp_rank) {
  for (const ShardEntry& shard : manifest.shards) {
    if (shard.pipeline_rank != pp_rank || shard.tensor_rank != tp_rank) continue;
    const SafetensorsFile file = load_safetensors(shard.file);
    return {file.tensors.begin(), file.tensors.end()};
  }
  throw Error(
      str(manifest.dir, ": no shard for pipeline rank ", pp_rank, " tensor rank ", tp_rank));
}

}  // namespace triax
