// defines: triax::CheckpointManifest, triax::checkpoint_root, triax::resolve_resume_spec,
//          triax::read_checkpoint, triax::save_checkpoint, triax::load_checkpoint
//
// A checkpoint is a folder ROOT/step_NNNNNNNN holding
//   pp<P>-tp<T>.safetensors   one shard per (pipeline, tensor) position: its parameters and
//                             optimizer state (GptTrainer::state_tensors names), written by the
//                             position's dp-rank 0 (the dp replicas are identical)
//   manifest.yaml             format version, step, consumed samples, the layout (tp, pp, chunks
//                             per rank, the dp it was written at), the data position, each
//                             shard's size and CRC-32, the parameter table (name, stage, full
//                             shape, how it is split over tp) and the resolved config
// and ROOT/latest names the newest complete one.
// Writes are atomic and ordered: shards (temporary name, fsync, rename), then the manifest, then
// `latest`. A folder without a manifest is an interrupted save and is never loaded, and `latest`
// still names the previous checkpoint, so a kill -9 at any point loses nothing saved before.
// The data position is the step: the global batches do not depend on dp (Note [Global batch
// equivalence]), so a checkpoint resumes at any dp with the same tp and pp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "parallel/parallel_context.h"
#include "tools/gpt_trainer.h"

namespace triax {

constexpr int kCheckpointFormatVersion = 1;

struct CheckpointShard {
  std::string file;  ///< path
  int pipeline_rank = 0;
  int tensor_rank = 0;
  int64_t bytes = 0;
  uint32_t crc32 = 0;
};

struct CheckpointManifest {
  std::string dir;  ///< the step folder
  int format_version = 0;
  int64_t step = 0;              ///< optimizer steps done
  int64_t consumed_samples = 0;  ///< step * global_batch
  int64_t tensor = 1, pipeline = 1, chunks_per_rank = 1, data_written_at = 1;
  Config config;  ///< the resolved config the checkpoint was written with
  std::vector<CheckpointShard> shards;
};

/// "step_00000012".
std::string step_folder(int64_t step);
/// "pp1-tp0.safetensors".
std::string shard_name(int pp, int tp);

/// Writes `m.dir`/manifest.yaml, then the root's `latest` (both atomic). `parameters`: one
/// "name stage AxB split_dim split_stride" line per parameter.
void write_checkpoint_manifest(const CheckpointManifest& m,
                               const std::vector<std::string>& parameters, const Config& config);

/// checkpoint.dir, or run.dir/checkpoints; "" when neither is set.
std::string checkpoint_root(const Config& config);

/// `--resume auto` means "latest" when the checkpoint folder has a `latest` pointer and no
/// resume otherwise (a requeued job preempted before its first save starts afresh); returns
/// `spec` unchanged for any other value and "" for no resume.
std::string resolve_resume_spec(const std::string& spec, const Config& config);

/// Resolves `spec` ("latest", a step folder, or a root holding `latest`), reads its manifest,
/// checks every shard's size and CRC-32 and that its tp/pp match `config`. Pure file reading,
/// so it runs on every rank before communication: a bad checkpoint is one clear error per rank
/// (ConfigError naming the file and what is wrong).
CheckpointManifest read_checkpoint(const std::string& spec, const Config& config);

/// The same without comparing layouts (for conversions); "latest" resolves under `root`.
CheckpointManifest read_checkpoint_files(const std::string& spec, const std::string& root);

/// Saves this step (a collective over the world). Returns the step folder.
std::string save_checkpoint(GptTrainer& trainer, ParallelContext& context, const Config& config,
                            int64_t step);

/// Each rank loads its (pp, tp) shard into the trainer.
void load_checkpoint(GptTrainer& trainer, ParallelContext& context,
                     const CheckpointManifest& manifest);

}  // namespace triax
