// Activation recompute (train.recompute) changes memory, never numbers: for the GPT and the Llama,
// in every (dp, tp, pp)
// layout that fits this launch (mpiexec -n 1, 2, 4, 8) and every schedule, with dropout on (so the
// dropout streams must be replayed exactly), full recompute of every block, of one block per
// chunk, and selective recompute of the attention core give bit-identical losses, gradient norms
// and final parameters to no recompute, in fp32. And they keep less: after a forward, the graph
// of a full-recompute model holds less memory than a selective one, which holds less than none.
#include <catch2/catch.hpp>

#include "models/gpt.h"
#include "parallel/comm/mpi_communicator.h"
#include "schedules/heap_usage.h"
#include "support/test_world.h"
#include "support/tiny_gpt.h"
#include "support/tiny_llama.h"
#include "train/trainer.h"

using namespace triax;

namespace {

struct Run {
  std::vector<double> losses, norms;
  std::vector<torch::Tensor> params;
};

Run train(Config config, std::shared_ptr<Communicator> world, const std::string& recompute,
          int layers) {
  config.train.recompute = choice_from<Recompute>(recompute);
  config.train.recompute_layers = layers;
  ParallelContext context(world, ParallelLayout::from_config(config.parallel, world->size()));
  Trainer trainer(testing::plan_for(config, context), context);
  Run run;
  for (int step = 0; step < 4; ++step) {
    run.losses.push_back(trainer.step(testing::tiny_gpt_batch(step, config)));
    run.norms.push_back(trainer.last_grad_norm());
  }
  for (auto& chunk : trainer.chunks()) {
    for (const auto& p : chunk->module().parameters()) run.params.push_back(p.detach().clone());
  }
  return run;
}

}  // namespace

TEST_CASE("recompute gives bit-identical training in every layout and schedule",
          "[mpi][recompute]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  for (const auto family : {testing::tiny_gpt_config, testing::tiny_llama_config}) {
    for (int tp : {1, 2}) {
      for (int pp : {1, 2}) {
        if (n % (tp * pp) != 0 || n / (tp * pp) > 2) continue;
        std::vector<std::pair<std::string, int>> schedules{{"1f1b", 1}};
        if (pp > 1) schedules = {{"gpipe", 1}, {"1f1b", 1}, {"interleaved", 2}};
        for (const auto& [name, chunks] : schedules) {
          Config config = family(tp, pp, name, chunks);
          config.model.dropout = 0.1;
          const Run expected = train(config, world, "none", 0);
          for (const auto& [mode, layers] : std::vector<std::pair<std::string, int>>{
                   {"full", 0}, {"full", 1}, {"selective", 0}}) {
            INFO(choice_name(config.model.arch)
                 << " tp=" << tp << " pp=" << pp << " schedule=" << name << " recompute=" << mode
                 << " layers=" << layers);
            const Run got = train(config, world, mode, layers);
            CHECK(got.losses == expected.losses);
            CHECK(got.norms == expected.norms);
            REQUIRE(got.params.size() == expected.params.size());
            bool same = true;
            for (size_t k = 0; k < got.params.size(); ++k) {
              same = same && got.params[k].equal(expected.params[k]);
            }
            CHECK(same);
          }
        }
      }
    }
  }
}

TEST_CASE("recompute keeps fewer activations after the forward", "[recompute]") {
  auto self = MpiCommunicator::self();
  const auto held_after_forward = [&](const std::string& mode) {
    GptOptions options;
    options.vocab = 64;
    options.hidden = 64;
    options.heads = 4;
    options.layers = 4;
    options.seq_len = 128;
    options.dropout = 0.1;
    options.recompute = choice_from<Recompute>(mode);
    Gpt model(options, *self);
    torch::manual_seed(3);
    const torch::Tensor ids = torch::randint(0, 64, {8, 129});
    const int64_t before = heap_bytes_in_use();
    torch::Tensor loss = model->loss(ids.narrow(1, 0, 128), ids.narrow(1, 1, 128));
    const int64_t held = heap_bytes_in_use() - before;
    loss.backward();
    return held;
  };
  const int64_t none = held_after_forward("none");
  const int64_t selective = held_after_forward("selective");
  const int64_t full = held_after_forward("full");
  INFO("held after forward: none " << none << " selective " << selective << " full " << full);
  CHECK(selective < none * 3 / 4);  // the s^2 tensors dominate at s = 128, h = 64
  CHECK(full < selective / 2);
}
