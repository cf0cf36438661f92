// defines: triax::assign_servers
//
// How a position's parameters are split among its K parameter servers: into K contiguous runs
// of the parameters (contiguous in DDP's bucket order too, so each bucket goes to one server),
// the cuts placed where each server's bytes come nearest an equal share. Every parameter tensor
// stays whole on one server; a server with none would have nothing to do, so K may not exceed
// the number of tensors.
#pragma once

#include <cstdint>
#include <vector>

namespace triax {

/// The server of each parameter, given each one's bytes (in registration order).
std::vector<int> assign_servers(const std::vector<int64_t>& bytes, int servers);

}  // namespace triax
