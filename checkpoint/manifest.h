// defines: triax::Manifest, triax::ShardEntry, triax::ParameterEntry, triax::ShardRecord,
//          triax::kCheckpointFormatVersion, triax::step_folder, triax::shard_name
//
// The checkpoint format's one owner. A checkpoint is a folder ROOT/step_NNNNNNNN holding
//   pp<P>-tp<T>.safetensors   one shard per (pipeline, tensor) position (tensor names:
//                             checkpoint/state_name.h), written by the position's dp-rank 0
//   manifest.yaml             written last, this struct:
//     format_version: 1
//     step: 300                      optimizer steps done
//     consumed_samples: 9600         step * global_batch
//     layout: {tensor, pipeline, chunks_per_rank, data_written_at}   (data_written_at: the dp of
//                                    the run that wrote it; 0 = converted offline)
//     data: {seed, next_global_batch, rule}    the data position (a function of the step)
//     shards: [{file, pipeline_rank, tensor_rank, bytes, crc32}, ...]
//     parameters: [{name, stage, shape "AxB" (full, unpadded), tp_split_dim (-1 = replicated),
//                   tp_split_stride}, ...]
//     config: |                      the resolved configuration it was written with
// and ROOT/latest names the newest complete step folder. read(), write() and verify() sit side
// by side below so the reader and the writer cannot drift apart; a unit test round-trips them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"

namespace triax {

constexpr int kCheckpointFormatVersion = 1;

struct ShardEntry {
  std::string file;  ///< path (the manifest stores the file name; read() makes it a path)
  int pipeline_rank = 0;
  int tensor_rank = 0;
  int64_t bytes = 0;
  uint32_t crc32 = 0;
};

/// How one parameter of the whole model is stored: its global stage, its full (unpadded) shape
/// and how tensor parallelism splits it (the inverse is `unshard` in checkpoint/convert).
struct ParameterEntry {
  std::string name;  ///< within its chunk, e.g. "layer3.fc.weight"
  int64_t stage = 0;
  std::vector<int64_t> shape;
  int64_t tp_split_dim = -1;  ///< -1: replicated over tp
  int64_t tp_split_stride = 1;

  bool operator==(const ParameterEntry& o) const {
    return name == o.name && stage == o.stage && shape == o.shape &&
           tp_split_dim == o.tp_split_dim && tp_split_stride == o.tp_split_stride;
  }
};

/// One (pp, tp) position's part of a manifest: what a shard writer tells the manifest writer.
struct ShardRecord {
  ShardEntry shard;
  std::vector<ParameterEntry> parameters;

  /// As text for a collective (the manifest's own YAML spelling), and back.
  std::string encode() const;
  static ShardRecord decode(const std::string& text);
};

struct Manifest {
  std::string dir;  ///< the step folder
  int format_version = kCheckpointFormatVersion;
  int64_t step = 0;
  int64_t consumed_samples = 0;
  int64_t tensor = 1, pipeline = 1, chunks_per_rank = 1;
  int64_t data_written_at = 1;  ///< dp of the writing run; 0 = converted offline
  int64_t seed = 0;             ///< train.seed: with the step, the data position
  Config config;
  std::vector<ShardEntry> shards;
  std::vector<ParameterEntry> parameters;

  std::string path() const { return dir + "/manifest.yaml"; }

  /// Parses `step_dir`/manifest.yaml. Throws ConfigError naming the file when it is missing,
  /// unreadable or of a newer format.
  static Manifest read(const std::string& step_dir);
  /// Writes path() atomically (the caller writes the shards first and `latest` after).
  void write() const;
  /// Every listed shard exists with the recorded size and CRC-32, one per (pp, tp) position;
  /// throws ConfigError naming the file otherwise.
  void verify() const;
  /// The parameter table entry of `name`; throws naming the manifest when absent.
  const ParameterEntry& parameter(const std::string& name) const;
};

/// "step_00000012".
std::string step_folder(int64_t step);
/// "pp1-tp0.safetensors".
std::string shard_name(int pp, int tp);
/// Points ROOT/latest at `step_dir` (atomically): the newest complete checkpoint.
void write_latest(const std::string& step_dir);

}  // namespace triax
