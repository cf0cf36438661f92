#include "parallel/node_topology.h"

#include <unistd.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "core/strings.h"

namespace triax {

NodeTopology::NodeTopology(const std::vector<std::string>& node_key_of_rank) {
  TRIAX_CHECK(!node_key_of_rank.empty(), "a node topology needs at least one rank");
  std::vector<std::string> keys;
  for (size_t rank = 0; rank < node_key_of_rank.size(); ++rank) {
    const std::string& key = node_key_of_rank[rank];
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      names_.push_back(key.substr(0, key.find('#')));
      ranks_of_node_.emplace_back();
      it = keys.end() - 1;
    }
    const int node = static_cast<int>(it - keys.begin());
    node_of_rank_.push_back(node);
    ranks_of_node_[static_cast<size_t>(node)].push_back(static_cast<int>(rank));
  }
}

int NodeTopology::node_of(int rank) const {
  TRIAX_CHECK(rank >= 0 && rank < world_size(), "rank ", rank, " outside a world of ",
              world_size());
  return node_of_rank_[static_cast<size_t>(rank)];
}

const std::string& NodeTopology::name(int node) const {
  return names_.at(static_cast<size_t>(node));
}

const std::vector<int>& NodeTopology::ranks_on(int node) const {
  return ranks_of_node_.at(static_cast<size_t>(node));
}

int NodeTopology::local_rank_of(int rank) const {
  const std::vector<int>& ranks = ranks_on(node_of(rank));
  return static_cast<int>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
}

bool NodeTopology::uniform() const {
  for (const auto& ranks : ranks_of_node_) {
    if (ranks.size() != ranks_of_node_.front().size()) return false;
  }
  return true;
}

int NodeTopology::even_share(const std::vector<int>& group) const {
  std::map<int, int> count;  // node -> members there
  for (int rank : group) ++count[node_of(rank)];
  const int share = count.empty() ? 0 : count.begin()->second;
  for (const auto& [node, n] : count) {
    if (n != share) return 0;
  }
  return share;
}

std::vector<int> NodeTopology::nodes_of(const std::vector<int>& group) const {
  std::vector<int> nodes;
  for (int rank : group) nodes.push_back(node_of(rank));
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

std::string NodeTopology::describe(const std::vector<int>& group) const {
  std::vector<std::string> parts;
  for (int node : nodes_of(group)) parts.push_back(name(node));
  return join(parts, "+");
}

std::string NodeTopology::summary() const {
  std::vector<std::string> parts;
  for (int node = 0; node < num_nodes(); ++node) {
    std::vector<std::string> ranks;
    for (int rank : ranks_on(node)) ranks.push_back(std::to_string(rank));
    parts.push_back(str(name(node), " ranks [", join(ranks, ","), "]"));
  }
  return str(num_nodes(), num_nodes() == 1 ? " node: " : " nodes: ", join(parts, ", "));
}

std::string local_node_key(int node_index) {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::string key = host[0] != '\0' ? host : "localhost";
  if (node_index >= 0) key += str("#", node_index);
  return key;
}

}  // namespace triax
