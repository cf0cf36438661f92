// Fuzz target: the rank table (job/rank_table.h), read by the failure policy and triax flight.
// Malformed lines are skipped, never fatal: parsing must not crash and what it keeps is sane.
#include <cstdlib>
#include <string>

#include "job/rank_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const triax::RankTable table = triax::parse_rank_table(text);
  for (const triax::RankEntry& e : table) {
    if (e.host.empty() || e.host.find(' ') != std::string::npos) std::abort();
  }
  (void)triax::ranks_on_host(table, "n2.cluster");
  return 0;
}
