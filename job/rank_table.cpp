#include "job/rank_table.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "core/strings.h"
#include "job/output_check.h"
#include "parallel/comm/gather_text.h"

namespace triax {

std::string format_rank_table(const RankTable& table) {
  std::string text;
  for (const RankEntry& e : table) text += str(e.rank, " ", e.host, " ", e.pid, "\n");
  return text;
}

RankTable parse_rank_table(const std::string& text) {
  RankTable table;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    RankEntry e;
    std::string extra;
    if (fields >> e.rank >> e.host >> e.pid && !(fields >> extra) && e.rank >= 0) {
      table.push_back(e);
    }
  }
  return table;
}

RankTable gather_rank_table(Communicator& world) {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  const RankEntry mine{world.rank(), host, static_cast<long>(::getpid())};
  std::string text;
  for (const std::string& line : all_gather_text(world, format_rank_table({mine}))) text += line;
  return parse_rank_table(text);
}

void write_rank_table(const RankTable& table, const std::string& path) {
  std::ofstream file(path);
  file << format_rank_table(table);
  check_written(file, path, "the rank table (run.dir)");
}

RankTable read_rank_table(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return parse_rank_table(text.str());
}

std::vector<int> ranks_on_host(const RankTable& table, const std::string& host) {
  const std::string short_host = host.substr(0, host.find('.'));
  std::vector<int> ranks;
  for (const RankEntry& e : table) {
    if (e.host == host || e.host == short_host) ranks.push_back(e.rank);
  }
  return ranks;
}

}  // namespace triax
