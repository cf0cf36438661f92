#include "train/batch_plan.h"

#include <vector>

#include "core/error.h"

namespace triax {
namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> result;
  for (int64_t d = 1; d <= n && result.size() < 12; ++d) {
    if (n % d == 0) result.push_back(d);
  }
  return result;
}

}  // namespace

BatchPlan BatchPlan::create(const TrainConfig& train, int dp) {
  TRIAX_CHECK(dp >= 1, "dp=", dp);
  BatchPlan plan;
  plan.global_batch = train.global_batch;
  plan.dp = dp;
  if (train.global_batch % dp != 0) {
    const int64_t below = train.global_batch / dp * dp;
    throw ConfigError(str("train.global_batch: ", train.global_batch,
                          " is not divisible by dp = ", dp,
                          " (dp = world / (context * tensor * pipeline), "
                          "chosen at launch; valid: multiples of ",
                          dp, ", e.g. ", below > 0 ? str(below, " or ") : "", below + dp, ")"));
  }
  plan.local_batch = train.global_batch / dp;
  plan.micro_batch = train.micro_batch == 0 ? plan.local_batch : train.micro_batch;
  if (plan.local_batch % plan.micro_batch != 0) {
    throw ConfigError(
        str("train.micro_batch: ", plan.micro_batch,
            " does not divide the per-rank batch global_batch / dp = ", train.global_batch, " / ",
            dp, " = ", plan.local_batch, " (valid: ", join(divisors(plan.local_batch), ", "),
            plan.local_batch > 12 ? ", ..." : "", "; or 0 for one micro-batch)"));
  }
  plan.num_microbatches = plan.local_batch / plan.micro_batch;
  return plan;
}

std::string BatchPlan::describe() const {
  return str("global batch ", global_batch, " = dp ", dp, " x ", num_microbatches, " micro-batch",
             num_microbatches == 1 ? "" : "es", " x ", micro_batch, " samples");
}

}  // namespace triax
