// defines: triax::CalibrateOptions, triax::check_calibration, triax::calibrate
//
// `triax calibrate CONFIG`: measures, on the ranks it is launched on, what the planner's step
// time model needs (plan/profile.h), every rank at once (as in training, ranks on a node share
// its cores and memory bandwidth; the slowest rank's figure is kept):
//   compute   for each tp that divides the world and the model's heads, each recompute mode,
//             with and without sequence parallelism, and micro-batches 1, 2, 4, ... up to the
//             global batch (at most `max_micro_batch`): a three-stage model of one layer each is
//             built with the model spec (the first stage adds the embedding, the last the head
//             and loss) over a real tp group, and one micro-batch's forward and backward of each
//             timed (the median of 3 windows of repetitions, ~13 ms each, so time-sharing of
//             oversubscribed cores averages out); the middle stage's backward is also run split
//             (input gradient, then weight gradients) for W's share
//   links     all-reduce, all-gather and reduce-scatter over groups of 2, 4, ... ranks inside a
//             node and, with several nodes, one rank per node; send/recv ping-pong inside and
//             across; buffers 4 KiB .. 8 MiB, fitted by least squares to α + β·bytes
//   optimizer the run's optimizer stepping 1M parameters
//   waiting   with more ranks than cores on a node: the share of a core a rank waiting for a
//             message still takes (half the ranks compute while their partners wait)
// The profile is for the configuration's model shape and for this many ranks per node.
#pragma once

#include <memory>

#include "core/config.h"
#include "parallel/comm/communicator.h"
#include "parallel/node_topology.h"
#include "plan/profile.h"

namespace triax {

struct CalibrateOptions {
  int repeats = 5;  ///< optimizer and overhead timings (medians)
  int64_t max_micro_batch = 16;
};

/// Throws ConfigError (before any communication) when the model has no layout to plan.
void check_calibration(const Config& config);

/// Collective over `world`; every rank returns the same profile.
Profile calibrate(const Config& config, Communicator& world, const NodeTopology& nodes,
                  const CalibrateOptions& options = {});

}  // namespace triax
