// defines: triax::RankEntry, triax::RankTable, triax::format_rank_table, triax::parse_rank_table,
//          triax::gather_rank_table, triax::write_rank_table, triax::read_rank_table
//
// The rank table, run.dir/ranks.txt (RunPaths::rank_table): where every rank runs, so that a
// process the launcher reports by PID (mpirun's BAD TERMINATION box), a host in a connection
// error, or a node that vanished is named as ranks. The format, one owner (this file), three
// readers (here; the death watch's script, job/death_watch.cpp; tools/flight_report.py):
//   one line per rank, in rank order:  RANK HOST PID\n
//   RANK and PID decimal; HOST the rank's hostname (no spaces); fields separated by one space.
// Gathered once at start (a collective), written by rank 0, and kept in memory by every rank
// for the failure policy (job/failure_policy.h).
#pragma once

#include <string>
#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {

struct RankEntry {
  int rank = -1;
  std::string host;
  long pid = 0;
};
using RankTable = std::vector<RankEntry>;

/// The file's text.
std::string format_rank_table(const RankTable& table);
/// Entries of `text` in its order; lines that are not `RANK HOST PID` are skipped.
RankTable parse_rank_table(const std::string& text);
/// This rank's entry (hostname, pid) from every rank of `world`, in rank order (a collective).
RankTable gather_rank_table(Communicator& world);
/// Writes `table` to `path` (checked: names the path and the reason on failure).
void write_rank_table(const RankTable& table, const std::string& path);
/// The table at `path`; empty when it is missing.
RankTable read_rank_table(const std::string& path);
/// Ranks that ran on `host` (a full name matches its short form too: "n2.cluster" ~ "n2").
std::vector<int> ranks_on_host(const RankTable& table, const std::string& host);

}  // namespace triax
