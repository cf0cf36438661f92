#include "parallel/ps/server_topology.h"

#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

// Names `group` by its members' world ranks (flight records and timeouts name them).
void label_by_world_rank(Communicator& group, int world_rank, const std::string& name) {
  torch::Tensor mine = torch::tensor({static_cast<int64_t>(world_rank)}, torch::kLong);
  torch::Tensor all = torch::empty({group.size()}, torch::kLong);
  group.all_gather_async(all, mine)->wait();
  std::vector<int> members;
  for (int k = 0; k < group.size(); ++k) members.push_back(all[k].item<int>());
  group.set_label(name, members);
}

}  // namespace

ServerTopology::ServerTopology(std::shared_ptr<Communicator> world, const ParallelLayout& workers,
                               int servers, ServerPlacement placement)
    : placement_(placement), servers_(servers), workers_(workers.dp_size()) {
  const int positions = workers.tp_size() * workers.pp_size() * workers.cp_size();
  positions_ = positions;
  tp_ = workers.tp_size();
  pp_ = workers.pp_size();
  const int training = workers.world_size();
  const int rank = world->rank();
  world_rank_ = rank;
  TRIAX_CHECK(servers >= 1, "parameter servers: at least one server");
  if (dedicated()) {
    TRIAX_CHECK(world->size() == training + servers * positions, "parameter servers: a world of ",
                world->size(), " ranks for ", training, " workers and ", servers * positions,
                " servers");
  } else {
    TRIAX_CHECK(world->size() == training && servers <= workers_,
                "parameter servers: colocated servers are dp ranks");
  }
  if (!dedicated() && world->backend() != "mpi") {
    throw ConfigError(
        str("parameter_server.placement: colocated servers send to and receive from "
            "their own worker, which the ",
            world->backend(), " backend cannot (set comm.backend: mpi, or placement: dedicated)"));
  }
  trains_ = rank < training;
  int bridge_key = 0;
  if (trains_) {
    const RankCoord c = workers.coord_of(rank);
    position_ = (c.cp * workers.pp_size() + c.pp) * workers.tp_size() + c.tp;
    bridge_key = c.dp;
    if (!dedicated() && c.dp < servers) server_index_ = c.dp;
  } else {
    server_index_ = (rank - training) / positions;
    position_ = (rank - training) % positions;
    bridge_key = workers_ + server_index_;
  }
  // Workers keep their world ranks in their own world: the ParallelContext's layout reads them.
  if (dedicated()) {
    std::unique_ptr<Communicator> part = world->split(trains_ ? 0 : 1, rank);
    if (trains_) worker_world_ = std::move(part);
  } else {
    worker_world_ = world;
  }
  bridge_ = world->split(position_, bridge_key);
  label_by_world_rank(*bridge_, rank, str("ps bridge ", position_));
  // Server index slowest, position fastest.
  server_group_ = world->split(serves() ? 0 : -1, server_index_ * positions + position_);
  if (server_group_) label_by_world_rank(*server_group_, rank, "ps servers");
}

std::string ServerTopology::prefix() const {
  return str("[rank ", world_rank_, " server ", server_index_, "]");
}

}  // namespace triax
