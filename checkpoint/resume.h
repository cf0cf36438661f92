// defines: triax::open_checkpoint, triax::read_checkpoint, triax::check_same_model
//
// Reading a checkpoint before training from it: locate the step folder, read the manifest,
// verify every shard's size and CRC-32, and (for a run) refuse one written for another model,
// optimizer or tp/pp layout, key by key. Pure file reading, so `triax train --resume` runs it on
// every rank before any communication: a bad checkpoint is one clear error per rank.
// The data position needs no state of its own: the global batches do not depend on dp (Note
// [Global batch equivalence]), so a checkpoint resumes at any dp with the same tp and pp.
#pragma once

#include <string>

#include "checkpoint/manifest.h"
#include "core/config.h"

namespace triax {

/// Locates (`latest` under `root`), reads and verifies a checkpoint, whatever its layout
/// (for conversions).
Manifest open_checkpoint(const std::string& spec, const std::string& root);

/// The same, then checks that the checkpoint's model, optimizer and tp/pp match `config`
/// (ConfigError naming each differing key, or the `triax reshard` command that converts it).
Manifest read_checkpoint(const std::string& spec, const Config& config);

/// Throws ConfigError naming each difference between the checkpoint's configuration (`saved`,
/// from folder `dir`) and `config` in what the saved numbers are: model.arch, every model.* key
/// the family's build reads (ModelSpec::model_keys), train.optimizer and
/// schedule.layer_boundaries.
void check_same_model(const Config& saved, const Config& config, const std::string& dir);

}  // namespace triax
