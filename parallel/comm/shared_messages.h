// defines: triax::share_messages
//
// Every rank's message on every rank without sending it, where the ranks share a node's memory:
// each rank writes its message once into POSIX shared memory (shm_open), and every rank maps the
// others' and reads them in place. The online re-layout's state gather
// (checkpoint/redistribute.h) uses it: all-gathering 10 MB to each of 4 oversubscribed ranks
// through MPI took 14 ms of a 50 ms pause (each byte copied twice on its way, with a scheduling
// round per piece); written once and mapped, the bytes are copied only into the new model.
// (MPI-3's shared windows do the same, but creating one spins in MPI for 90 ms there.)
//
// Two small collectives: each message's name and size, then whether every rank mapped every
// message. Where one could not (ranks on other nodes, or in other mount namespaces; shared memory
// full), nothing is shared, on every rank alike, and the caller sends the messages instead. A
// segment's name is unlinked as soon as every rank has mapped it: nothing is left in /dev/shm
// after, and a rank that dies leaves at most its own until the machine's next start.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "parallel/comm/communicator.h"

namespace triax {

/// Collective over `world`: this rank's message of `bytes` (0 for none), which `write` fills
/// (given where), and every rank's in rank order (undefined where a rank had none) as byte
/// tensors that map it (each keeps its mapping alive, read-only). Nothing (on every rank) where
/// the ranks could not all share memory.
std::optional<std::vector<torch::Tensor>> share_messages(
    Communicator& world, int64_t bytes, const std::function<void(uint8_t*)>& write);

}  // namespace triax
