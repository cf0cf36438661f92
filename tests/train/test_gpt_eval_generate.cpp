// Evaluation and generation go through the pipeline like training, so they too must give, in
// every (dp, tp, pp) layout that fits this launch, what one process gives: after the same
// training steps, the held-out loss within the composition tolerance, and greedy generated text
// byte for byte (the argmax is stable because the logits agree to ~1e-6).
#include <catch2/catch.hpp>

#include "data/distributed_sampler.h"
#include "parallel/comm/mpi_communicator.h"
#include "support/test_world.h"
#include "support/tiny_gpt.h"
#include "train/text_generator.h"
#include "train/trainer.h"

using namespace triax;

namespace {

constexpr double kLossTol = 1e-5;
constexpr int kSteps = 6;

struct Outcome {
  double val_loss = 0;
  std::string text;
};

Outcome train_then_evaluate(const Config& config, ParallelContext& context) {
  Trainer trainer(testing::plan_for(config, context), context);
  for (int step = 0; step < kSteps; ++step) trainer.step(testing::tiny_gpt_batch(step, config));
  torch::manual_seed(99);
  const torch::Tensor held_out = torch::randint(
      0, config.model.vocab, {config.train.global_batch, config.model.seq_len + 1}, torch::kLong);
  Outcome outcome;
  outcome.val_loss = trainer.evaluate_local(
      token_batch(DistributedSampler::local_rows(held_out, context.dp_rank(), context.dp_size())));
  outcome.text = generate_text(trainer, context, config, *load_tokenizer("bytes"));
  return outcome;
}

Config with_sampling(Config c) {
  c.sample.prompt = std::string("\x01\x02\x03", 3);  // tokens < vocab 13
  c.sample.tokens = 12;                              // longer than seq_len: the window slides
  c.sample.top_k = 1;
  return c;
}

}  // namespace

TEST_CASE("evaluation and greedy generation match one process in every layout", "[mpi][evalgen]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  const Config reference_config = with_sampling(testing::tiny_gpt_config(1, 1, "1f1b", 1));
  std::shared_ptr<Communicator> single = MpiCommunicator::self();
  ParallelContext single_context(single, ParallelLayout::create(1, 1, 1));
  const Outcome expected = train_then_evaluate(reference_config, single_context);
  REQUIRE(expected.text.size() == 15);

  for (int tp : {1, 2}) {
    for (int pp : {1, 2}) {
      if (n % (tp * pp) != 0 || n / (tp * pp) > 2) continue;
      const std::string schedule = pp > 1 ? "interleaved" : "1f1b";
      const int chunks = pp > 1 ? 2 : 1;
      INFO("dp=" << n / (tp * pp) << " tp=" << tp << " pp=" << pp << " " << schedule);
      const Config config = with_sampling(testing::tiny_gpt_config(tp, pp, schedule, chunks));
      ParallelContext context(world, ParallelLayout::from_config(config.parallel, n));
      const Outcome got = train_then_evaluate(config, context);
      CHECK(std::abs(got.val_loss - expected.val_loss) / expected.val_loss < kLossTol);
      CHECK(got.text == expected.text);
    }
  }
}

TEST_CASE("evaluation changes nothing: the next step is the same", "[mpi][evalgen]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  const Config config = testing::tiny_gpt_config(n % 2 == 0 ? 2 : 1, n % 4 == 0 ? 2 : 1, "1f1b", 1);
  ParallelContext context(world, ParallelLayout::from_config(config.parallel, world->size()));
  Trainer plain(testing::plan_for(config, context), context);
  Trainer evaluated(testing::plan_for(config, context), context);
  const Batch batch = testing::tiny_gpt_batch(0, config);
  evaluated.evaluate_local(testing::local_share(batch, context));
  CHECK(plain.step(batch) == evaluated.step(batch));
}
