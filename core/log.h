// defines: triax::log::set_prefix, set_is_root, info, warn, error
//
// Every runtime message carries the rank and its coordinates ("[rank 5 dp1 tp1 pp1]") so that
// interleaved output from many processes can be read. `info` prints on the root rank only (the
// other ranks stay quiet unless something is wrong); `warn` and `error` print on every rank.
#pragma once

#include <string>

namespace triax::log {

/// Sets the prefix of every message, e.g. "[rank 5 dp1 tp1 pp1]".
void set_prefix(const std::string& prefix);
const std::string& prefix();
/// Whether this process prints `info` lines (rank 0 by default).
void set_is_root(bool is_root);
bool is_root();

void info(const std::string& message);
void warn(const std::string& message);
void error(const std::string& message);

}  // namespace triax::log
