#include <catch2/catch.hpp>

#include "train/batch_plan.h"

using Catch::Contains;

TEST_CASE("the global batch is cut by dp and micro-batch", "[batch]") {
  triax::TrainConfig train;
  train.global_batch = 64;
  train.micro_batch = 4;
  const auto plan = triax::BatchPlan::create(train, 4);
  CHECK(plan.local_batch == 16);
  CHECK(plan.num_microbatches == 4);
  CHECK(plan.micro_batch * plan.num_microbatches * plan.dp == plan.global_batch);
  train.micro_batch = 0;
  CHECK(triax::BatchPlan::create(train, 2).num_microbatches == 1);
  CHECK(triax::BatchPlan::create(train, 2).micro_batch == 32);
}

TEST_CASE("indivisible batches name the key and what is valid", "[batch]") {
  triax::TrainConfig train;
  train.global_batch = 64;
  CHECK_THROWS_WITH(
      triax::BatchPlan::create(train, 3),
      Contains("train.global_batch: 64 is not divisible by dp = 3") && Contains("e.g. 63 or 66"));
  train.micro_batch = 5;
  CHECK_THROWS_WITH(triax::BatchPlan::create(train, 4),
                    Contains("train.micro_batch: 5 does not divide the per-rank batch "
                             "global_batch / dp = 64 / 4 = 16 (valid: 1, 2, 4, 8, 16"));
}
