// The learning-rate schedule at the points that define it.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "train/lr_schedule.h"

using Catch::Contains;
using triax::learning_rate;

namespace {

triax::TrainConfig schedule(const std::string& decay, int64_t warmup) {
  triax::TrainConfig t;
  t.lr = 1.0;
  t.min_lr = 0.1;
  t.lr_decay = triax::choice_from<triax::LrDecay>(decay);
  t.warmup_steps = warmup;
  return t;
}

}  // namespace

TEST_CASE("warm-up rises linearly and never starts at zero", "[lr]") {
  const auto t = schedule("cosine", 4);
  CHECK(learning_rate(t, 0, 14) == Approx(0.25));
  CHECK(learning_rate(t, 3, 14) == Approx(1.0));
  CHECK(learning_rate(schedule("cosine", 100), 9, 10) == Approx(0.1));  // all warm-up
}

TEST_CASE("cosine and linear decay reach min_lr at the last step", "[lr]") {
  const auto cosine = schedule("cosine", 4);
  CHECK(learning_rate(cosine, 4, 14) == Approx(1.0));
  CHECK(learning_rate(cosine, 13, 14) == Approx(0.1));
  CHECK(learning_rate(cosine, 8, 13) == Approx(0.55));  // halfway: the mean of lr and min_lr
  const auto linear = schedule("linear", 0);
  CHECK(learning_rate(linear, 0, 11) == Approx(1.0));
  CHECK(learning_rate(linear, 5, 11) == Approx(0.55));
  CHECK(learning_rate(linear, 10, 11) == Approx(0.1));
  CHECK(learning_rate(schedule("constant", 2), 50, 100) == 1.0);
}

TEST_CASE("a floor above the rate is a configuration error", "[lr]") {
  auto t = schedule("cosine", 0);
  t.min_lr = 2.0;
  CHECK_THROWS_WITH(triax::check_lr_schedule(t), Contains("train.min_lr: 2 is above train.lr=1"));
}
