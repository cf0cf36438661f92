// defines: triax::ServerOptimizer
//
// The Optimizer of a worker under ddp.mode: parameter_server: the parameter servers hold the
// state and take the step (train/param_server.h); this proxy passes the learning rate on, and at
// step() pulls the servers' new weights into the parameters (parallel/ps/server_client.h).
// A checkpoint's state comes from the servers through worker 0 (the writer), by checkpoint name,
// and a resume's goes back to them: the format is the one every optimizer writes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "parallel/ps/server_client.h"
#include "train/optim/optimizer.h"

namespace triax {

class ServerOptimizer : public Optimizer {
 public:
  /// `params`: this worker's, in the order the client's buffers were built from.
  ServerOptimizer(std::vector<OptimizedParam> params, ServerClient& client);
  void set_learning_rate(double lr) override { client_.set_learning_rate(lr); }
  /// Pulls the weights the servers computed from this step's pushes; their gradient norm.
  double step(double max_norm) override;
  /// Collective over the position's workers and servers; the state reaches worker 0 only.
  std::vector<NamedTensors> state_by_parameter() override;
  void load_state(const std::map<std::string, torch::Tensor>& tensors) override;
  /// None here: the servers hold it.
  int64_t state_bytes() const override { return 0; }

 private:
  std::vector<OptimizedParam> params_;
  ServerClient& client_;
};

}  // namespace triax
