// A reference that every rank of a multi-rank test compares with (most often the one-process
// run), computed once: on one rank while the others wait, then broadcast bit for bit. Computed on
// every rank, as the tests did first, n oversubscribed ranks each repeated it: at 8 ranks on 2
// cores that is four times the wall time of computing it once, and most of a test's time.
// Waiting ranks sleep between polls, leaving the cores to the root.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <map>
#include <string>

#include "parallel/comm/communicator.h"

namespace triax::testing {

using TensorMap = std::map<std::string, torch::Tensor>;

/// `compute()` on rank `root` of `world`, its tensors on every rank (a collective). An exception
/// on the root (a failed REQUIRE too) is rethrown there and ends the others with an error that
/// carries its message, not a hang; a wait longer than comm.timeout_s throws TimeoutError.
TensorMap computed_on(Communicator& world, int root, const std::function<TensorMap()>& compute);

/// A vector of doubles in a TensorMap and back (losses, norms).
torch::Tensor doubles(const std::vector<double>& values);
std::vector<double> doubles(const torch::Tensor& tensor);

}  // namespace triax::testing
