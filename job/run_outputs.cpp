#include "job/run_outputs.h"

#include <filesystem>
#include <fstream>

#include "core/flight_recorder.h"
#include "core/log.h"
#include "core/strings.h"
#include "job/death_watch.h"
#include "job/output_check.h"

namespace triax {

void prepare_flight_records(const RunPaths& paths, int rank, int world_size) {
  flight::set_rank(rank, world_size);
  if (!paths.enabled()) return;
  flight::set_dump_dir(paths.flight_dir());
  std::error_code ec;
  std::filesystem::remove(paths.flight_record(rank), ec);
  std::filesystem::remove(paths.ended_mark(rank), ec);
  std::filesystem::remove(paths.done_mark(rank), ec);
  if (rank == 0) std::filesystem::remove(paths.died(), ec);
  start_death_watch(rank, paths);
}

void write_resolved_config(const Config& config, const RunPaths& paths, int rank) {
  if (!paths.enabled() || rank != 0) return;
  std::filesystem::create_directories(paths.dir());
  const std::string path = paths.resolved_config();
  std::ofstream file(path);
  file << to_yaml(config);
  check_written(file, path, "the resolved configuration (run.dir)");
  log::info(str("resolved configuration written to ", path));
}

}  // namespace triax
