#include "train/optim/optimizer.h"

#include "train/optim/replicated_optimizer.h"
#include "train/optim/sharded_adamw.h"

namespace triax {

std::unique_ptr<Optimizer> make_optimizer(const Config& config, std::vector<OptimizedParam> params,
                                          const std::vector<GradientSync*>& syncs, Communicator& dp,
                                          Communicator& model_parallel) {
  if (shard_level(config) != ShardLevel::kNone) {
    return std::make_unique<ShardedAdamW>(config.train, std::move(params), syncs, dp,
                                          model_parallel);
  }
  return std::make_unique<ReplicatedOptimizer>(config.train, std::move(params), model_parallel);
}

}  // namespace triax
