// defines: triax::checkpoint_root, triax::resolve_resume_spec, triax::locate_checkpoint
//
// Where a run's checkpoints live and which step folder a `--resume` value names. Pure file
// system queries, so every rank answers them alike before any communication.
#pragma once

#include <string>

#include "core/config.h"

namespace triax {

/// checkpoint.dir, or run.dir/checkpoints; "" when neither is set.
std::string checkpoint_root(const Config& config);

/// `--resume auto` means "latest" when the checkpoint folder has a `latest` pointer and no
/// resume otherwise (a requeued job preempted before its first save starts afresh); returns
/// `spec` unchanged for any other value and "" for no resume.
std::string resolve_resume_spec(const std::string& spec, const Config& config);

/// The step folder `spec` names: "latest" (under `root`), a step folder, or a folder holding
/// `latest`. Throws ConfigError when it holds no manifest.
std::string locate_checkpoint(const std::string& spec, const std::string& root);

}  // namespace triax
