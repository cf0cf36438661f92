// defines: triax::all_gather_text
//
// Every rank's string, on every rank, in rank order: how per-rank descriptions (a checkpoint
// shard's parameter table and checksum) reach the rank that writes them down. Two collectives:
// the lengths, then the bytes padded to the longest.
#pragma once

#include <string>
#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {

std::vector<std::string> all_gather_text(Communicator& comm, const std::string& text);

}  // namespace triax
