#include "checkpoint/resume.h"

#include <vector>

#include "checkpoint/location.h"
#include "core/error.h"
#include "core/strings.h"
#include "models/model_spec.h"
#include "schedules/stage_placement.h"

namespace triax {

void check_same_model(const Config& saved, const Config& config, const std::string& dir) {
  std::vector<std::string> differ;
  const auto compare = [&](const char* key, const auto& was, const auto& now) {
    if (was != now) differ.push_back(str(key, " was ", was, ", now ", now));
  };
  compare("model.arch", saved.model.arch, config.model.arch);
  // The family's own list: every model.* key its build reads (models/model_keys.h).
  if (saved.model.arch == config.model.arch) {
    const ModelSpec& spec = model_spec(config.model.arch);
    for (std::string& d :
         ModelKeys::differences(spec.model_keys(saved.model), spec.model_keys(config.model))) {
      differ.push_back(std::move(d));
    }
  }
  compare("train.optimizer", saved.train.optimizer, config.train.optimizer);
  // Which stage holds which layer (the shards are per stage).
  compare("schedule.layer_boundaries", str("[", join(saved.schedule.layer_boundaries, ", "), "]"),
          str("[", join(config.schedule.layer_boundaries, ", "), "]"));
  if (differ.empty()) return;
  throw ConfigError(str(
      "checkpoint ", dir, " holds another model or optimizer: ", join(differ, "; "),
      " (valid: the checkpoint's values; ", dir, "/manifest.yaml has its whole configuration)"));
}

Manifest open_checkpoint(const std::string& spec, const std::string& root) {
  Manifest m = Manifest::read(locate_checkpoint(spec, root));
  m.verify();
  return m;
}

Manifest read_checkpoint(const std::string& spec, const Config& config) {
  Manifest m = open_checkpoint(spec, checkpoint_root(config));
  check_same_model(m.config, config, m.dir);
  if (m.tensor != config.parallel.tensor || m.pipeline != config.parallel.pipeline ||
      m.chunks_per_rank != config.schedule.chunks_per_rank) {
    throw ConfigError(str(
        "--resume ", spec, ": the checkpoint was written at parallel.tensor=", m.tensor,
        " parallel.pipeline=", m.pipeline, " schedule.chunks_per_rank=", m.chunks_per_rank,
        ", this run has tensor=", config.parallel.tensor, " pipeline=", config.parallel.pipeline,
        " chunks_per_rank=", config.schedule.chunks_per_rank,
        " (tp and pp shape the saved weights; dp may differ). Convert it first: triax reshard ",
        m.dir, " --tensor ", config.parallel.tensor, " --pipeline ", config.parallel.pipeline,
        " --out NEW_DIR"));
  }
  const PlacementShape saved = placement_shape(m.config.schedule.name);
  const PlacementShape wanted = placement_shape(config.schedule.name);
  if (saved != wanted) {
    const auto where = [](ScheduleKind kind) { return StagePlacement::of(kind, 1, 1).describe(); };
    throw ConfigError(
        str("--resume ", spec, ": the checkpoint places its chunks ", where(m.config.schedule.name),
            saved == PlacementShape::kV ? " (schedule.name: zbv)" : "",
            ", this run's schedule.name: ", config.schedule.name, " places them ",
            where(config.schedule.name), " (valid: schedule.name: ", m.config.schedule.name,
            "; or convert it first: triax reshard ", m.dir, " --tensor ", config.parallel.tensor,
            " --pipeline ", config.parallel.pipeline, " --chunks ", config.schedule.chunks_per_rank,
            " --schedule ", config.schedule.name, " --out NEW_DIR)"));
  }
  return m;
}

}  // namespace triax
