#include "train/metrics_file.h"

#include <cstdlib>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

// The step of a record we wrote ("{"step": 12, ..."); -1 for anything else, which is kept.
int64_t record_step(const std::string& line) {
  const std::string key = "{\"step\": ";
  if (line.compare(0, key.size(), key) != 0) return -1;
  return std::strtoll(line.c_str() + key.size(), nullptr, 10);
}

}  // namespace

std::ofstream open_metrics_file(const std::string& path, int64_t resume_step) {
  if (resume_step >= 0 && std::filesystem::exists(path)) {
    std::ifstream in(path);
    std::string kept, line;
    while (std::getline(in, line)) {
      if (record_step(line) <= resume_step) kept += line + "\n";
    }
    AtomicFile out(path);
    out.write(kept.data(), kept.size());
    out.commit();
  }
  std::ofstream metrics(path, resume_step >= 0 ? std::ios::app : std::ios::trunc);
  if (!metrics) throw Error(str(path, ": cannot write the metrics (run.dir)"));
  return metrics;
}

}  // namespace triax
