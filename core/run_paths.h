// defines: triax::RunPaths
//
// Every path under run.dir, spelled here and nowhere else (readers outside C++ — the death
// watch's script, tools/flight_report.py, tools/plot_metrics.py — follow this layout):
//   run.dir/
//     config.resolved.yaml     the resolved configuration (rank 0, at start)
//     ranks.txt                the rank table: "RANK HOST PID" per line (job/rank_table.h)
//     metrics.jsonl            one JSON record per optimizer step (train/metrics_file.h)
//     sample.txt               the text generated at the end (GPT)
//     loss.png                 `triax plot RUN_DIR`
//     checkpoints/             checkpoints, unless checkpoint.dir says otherwise
//     relayout                 a layout change asked while the run goes on (train/relayout.h)
//     autocache/               the frozen prefix's output per sample (train/prefix_cache.h)
//     flight/rank_R.json       rank R's flight record (core/flight_recorder.h)
//     flight/died.txt          the death watch's verdict on a rank that died (job/death_watch.h)
//     flight/ended/rank_R      when rank R ended abnormally (Unix time), written by its watcher
//     flight/ended/done_R      rank R ended on purpose
// An empty run.dir writes nothing: every path is then "".
#pragma once

#include <string>

namespace triax {

class RunPaths {
 public:
  explicit RunPaths(std::string run_dir) : dir_(std::move(run_dir)) {}

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  std::string resolved_config() const { return under("config.resolved.yaml"); }
  std::string rank_table() const { return under("ranks.txt"); }
  std::string metrics() const { return under("metrics.jsonl"); }
  std::string lock() const { return under(".triax.lock"); }
  std::string profile() const { return under("profile.yaml"); }  ///< `triax calibrate`
  std::string sample() const { return under("sample.txt"); }
  /// A layout change asked for while the job runs (relayout.on_request: train/relayout.h).
  std::string relayout_request() const { return under("relayout"); }
  /// AutoCache's rows (train/prefix_cache.h).
  std::string prefix_cache() const { return under("autocache"); }
  std::string loss_plot() const { return under("loss.png"); }
  std::string checkpoints() const { return under("checkpoints"); }
  std::string flight_dir() const { return under("flight"); }
  std::string flight_record(int rank) const { return under("flight/" + flight_record_name(rank)); }
  /// A flight record's file name inside the flight folder (core/flight_recorder.h writes it).
  static std::string flight_record_name(int rank) {
    return "rank_" + std::to_string(rank) + ".json";
  }
  std::string died() const { return under("flight/died.txt"); }
  std::string ended_dir() const { return under("flight/ended"); }
  std::string ended_mark(int rank) const {
    return under("flight/ended/rank_" + std::to_string(rank));
  }
  std::string done_mark(int rank) const {
    return under("flight/ended/done_" + std::to_string(rank));
  }

 private:
  std::string under(const std::string& name) const { return dir_.empty() ? "" : dir_ + "/" + name; }
  std::string dir_;
};

}  // namespace triax
