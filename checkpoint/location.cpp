#include "checkpoint/location.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/log.h"
#include "core/run_paths.h"

namespace triax {
namespace {
namespace fs = std::filesystem;
}  // namespace

std::string checkpoint_root(const Config& config) {
  if (!config.checkpoint.dir.empty()) return config.checkpoint.dir;
  return RunPaths(config.run.dir).checkpoints();
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

std::string locate_checkpoint(const std::string& spec, const std::string& root) {
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
  return dir;
}

}  // namespace triax
