// bf16 working weights with an fp32 master in the sharded optimizer (train.param_dtype: bf16),
// under mpiexec -n 2, 4, 8 (and alone):
//  - the semantics, against a run that holds the same values in fp32 weights: every forward is
//    the same (the loss bit for bit), a matmul weight's update is the same AdamW step on the same
//    fp32 master (bit for bit: its gradients are bf16 roundings accumulated in fp32 in both), the
//    other weights' (norms, biases, embeddings: their gradients are rounded to bf16 here, not
//    there) within a few bf16 roundings, with ZeRO-1 at pp 1 and ZeRO-2 under ZB-H1 with full
//    recompute; the working weights are the master rounded to nearest even;
//  - the levels: ZeRO-3 equals ZeRO-2 (with ZeRO-3's bucket layout) bit for bit in every layout
//    and schedule tried, GPT and Llama, and ZeRO-2 equals ZeRO-1 with one micro-batch a step; the
//    bytes kept between steps are half of fp32 weights', the optimizer's 1.5 times (the master);
//  - checkpoints hold the fp32 master: a bf16 run resumes where it stopped bit for bit, and one
//    saved at dp n loads into an fp32 run at dp 1, and back, with every saved value intact.
#include <catch2/catch.hpp>

#include <map>

#include "checkpoint/state_name.h"
#include "parallel/comm/mpi_communicator.h"
#include "support/test_world.h"
#include "support/tiny_gpt.h"
#include "support/tiny_llama.h"
#include "train/trainer.h"

using namespace triax;

namespace {

struct Run {
  std::vector<double> losses, norms;
};

Run train(Trainer& trainer, const Config& config, int first, int steps) {
  Run run;
  for (int step = first; step < first + steps; ++step) {
    run.losses.push_back(trainer.step(testing::tiny_gpt_batch(step, config)));
    run.norms.push_back(trainer.last_grad_norm());
  }
  return run;
}

Config bf16_weights(Config config, ShardLevel level) {
  config.train.precision = Precision::kBf16;
  config.train.param_dtype = Precision::kBf16;
  config.ddp.shard = level;
  return config;
}

// Every parameter's saved value (the master under bf16 weights), by checkpoint name.
std::map<std::string, torch::Tensor> saved_parameters(Trainer& trainer) {
  std::map<std::string, torch::Tensor> names;
  for (size_t c = 0; c < trainer.chunks().size(); ++c) {
    for (const auto& item : trainer.chunks()[c]->module().named_parameters()) {
      names[StateName::of_parameter(static_cast<int>(c), item.key()).str()] = torch::Tensor();
    }
  }
  for (auto& [name, tensor] : materialize(trainer.checkpoint_contents())) {
    const auto it = names.find(name);
    if (it != names.end()) it->second = tensor.clone();
  }
  return names;
}

// The working weights, by checkpoint name (gathered under ZeRO-3).
std::map<std::string, torch::Tensor> working_weights(Trainer& trainer) {
  std::map<std::string, torch::Tensor> out;
  trainer.with_whole_parameters([&] {
    for (size_t c = 0; c < trainer.chunks().size(); ++c) {
      for (const auto& item : trainer.chunks()[c]->module().named_parameters()) {
        out[StateName::of_parameter(static_cast<int>(c), item.key()).str()] =
            item.value().detach().clone();
      }
    }
  });
  return out;
}

std::map<std::string, torch::Tensor> as_map(CheckpointContents contents) {
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, tensor] : materialize(std::move(contents))) out[name] = tensor.clone();
  return out;
}

bool same_tensors(const std::map<std::string, torch::Tensor>& a,
                  const std::map<std::string, torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, tensor] : a) {
    const auto it = b.find(name);
    if (it == b.end() || !torch::equal(tensor, it->second)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("bf16 working weights compute what fp32 weights holding their values compute",
          "[mpi][zero]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  struct Layout {
    int pp;
    std::string schedule;
    ShardLevel level;
    Recompute recompute;
  };
  // ZeRO-1's main gradients are the bucket buffers; ZeRO-2's are per parameter, and ZB-H1's W
  // passes and full recompute's nested backward hand them gradients by other paths.
  std::vector<Layout> layouts{{1, "1f1b", ShardLevel::kOptimizer, Recompute::kNone}};
  if (n % 2 == 0) layouts.push_back({2, "zbh1", ShardLevel::kGradients, Recompute::kFull});
  for (const bool llama : {false, true}) {
    for (const Layout& layout : layouts) {
      const int dp = n / layout.pp;
      INFO((llama ? "llama" : "gpt")
           << " dp=" << dp << " pp=" << layout.pp << " " << layout.schedule << " " << layout.level);
      Config config = llama ? testing::tiny_llama_config(1, layout.pp, layout.schedule, 1)
                            : testing::tiny_gpt_config(1, layout.pp, layout.schedule, 1);
      config.train.global_batch = 4 * dp;  // two micro-batches a rank: accumulation in fp32
      config.train.recompute = layout.recompute;
      config.train.clip_grad = 0;  // the norm counts the rounded gradients of norms too
      // With eps (1, its largest valid value) above every gradient, AdamW's first step is
      // lr * g / (|g| + 1), about linear in the gradient: each weight's update shows its gradient
      // (a lost or doubled one, a sum in bf16).
      config.train.lr = 5;
      config.train.eps = 1;
      config.train.weight_decay = 0;
      ParallelContext context(world, ParallelLayout::from_config(config.parallel, n));
      const Config bf16 = bf16_weights(config, layout.level);
      Trainer mine(testing::plan_for(bf16, context), context);
      // The reference: fp32 weights holding the bf16 values the run starts from (bf16 compute).
      Config fp32 = bf16;
      fp32.train.param_dtype = Precision::kFp32;
      Trainer reference(testing::plan_for(fp32, context), context);
      {
        torch::NoGradGuard no_grad;
        for (auto& chunk : reference.chunks()) {
          for (auto& p : chunk->module().parameters()) p.copy_(p.to(torch::kBFloat16));
        }
      }
      const auto start = working_weights(mine);
      const auto start_reference = working_weights(reference);
      for (const auto& [name, w] : start) {
        INFO(name);
        CHECK(w.scalar_type() == torch::kBFloat16);
        CHECK(torch::equal(w.to(torch::kFloat), start_reference.at(name)));
      }
      const Run got = train(mine, bf16, 0, 1);
      const Run want = train(reference, fp32, 0, 1);
      CHECK(got.losses == want.losses);  // the same forward, bit for bit
      // No bf16 .grad outlives its addition into the fp32 main gradient.
      for (auto& chunk : mine.chunks()) {
        for (const auto& p : chunk->module().parameters()) CHECK(!p.grad().defined());
      }
      const auto master = saved_parameters(mine);
      const auto updated = saved_parameters(reference);
      const auto working = working_weights(mine);
      int exact = 0;
      for (const auto& [name, value] : master) {
        INFO(name);
        REQUIRE(value.scalar_type() == torch::kFloat);
        // The working weight is the master rounded to nearest even.
        CHECK(torch::equal(working.at(name), value.to(torch::kBFloat16)));
        const bool matmul = value.dim() == 2 && name.find("embedding") == std::string::npos;
        if (matmul) {
          ++exact;
          CHECK(torch::equal(value, updated.at(name)));
          continue;
        }
        // Norms, biases, embeddings: their gradients here are bf16 roundings (the embedding's
        // summed in fp32 first; a tied weight's two uses added in bf16), 2^-9 relative each.
        const torch::Tensor from = start.at(name).to(torch::kFloat);
        const torch::Tensor step = value - from, expected = updated.at(name) - from;
        const double size = expected.abs().max().item<double>();
        CHECK(size > 0);
        CHECK((step - expected).abs().max().item<double>() <= 0.02 * size);
      }
      CHECK(exact >= 4 * config.model.layers / layout.pp);
    }
  }
}

TEST_CASE("bf16 working weights: ZeRO-3 is ZeRO-2 bit for bit, gathering half the bytes",
          "[mpi][zero]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  struct Case {
    bool llama;
    int tp, pp, chunks;
    std::string schedule;
    Recompute recompute;
  };
  std::vector<Case> cases;
  for (const bool llama : {false, true}) {
    cases.push_back({llama, 1, 1, 1, "1f1b", Recompute::kNone});
    cases.push_back({llama, 2, 1, 1, "1f1b", Recompute::kFull});
  }
  cases.push_back({false, 1, 2, 1, "zbh1", Recompute::kNone});
  cases.push_back({false, 1, 2, 2, "interleaved", Recompute::kSelective});
  for (const Case& c : cases) {
    if (n % (c.tp * c.pp) != 0) continue;
    const int dp = n / (c.tp * c.pp);
    INFO((c.llama ? "llama" : "gpt") << " dp=" << dp << " tp=" << c.tp << " pp=" << c.pp << " "
                                     << c.schedule << " recompute=" << c.recompute);
    Config config = c.llama ? testing::tiny_llama_config(c.tp, c.pp, c.schedule, c.chunks)
                            : testing::tiny_gpt_config(c.tp, c.pp, c.schedule, c.chunks);
    config.train.global_batch = 16;  // 8 / dp micro-batches of 2 per rank
    config.train.recompute = c.recompute;
    config.parallel.sequence = c.tp > 1;
    config.ddp.reduce_dtype = Precision::kBf16;
    config.ddp.unit_buckets = true;
    ParallelContext context(world, ParallelLayout::from_config(config.parallel, n));
    const Config zero2 = bf16_weights(config, ShardLevel::kGradients);
    Trainer second(testing::plan_for(zero2, context), context);
    const Run expected = train(second, zero2, 0, 4);
    const Config zero3 = bf16_weights(config, ShardLevel::kParameters);
    Trainer third(testing::plan_for(zero3, context), context);
    const Run got = train(third, zero3, 0, 4);
    CHECK(got.losses == expected.losses);
    CHECK(got.norms == expected.norms);
    for (Trainer* t : {&second, &third}) {
      for (auto& chunk : t->chunks()) {
        for (const auto& p : chunk->module().parameters()) CHECK(!p.grad().defined());
      }
    }
    CHECK(same_tensors(working_weights(third), working_weights(second)));
    CHECK(same_tensors(saved_parameters(third), saved_parameters(second)));
    // Half of fp32 weights' bytes: ZeRO-3's bf16 slices against fp32 slices of the same buckets.
    Config fp32_weights = zero3;
    fp32_weights.train.param_dtype = Precision::kFp32;
    Trainer fp32(testing::plan_for(fp32_weights, context), context);
    CHECK(2 * third.parameter_bytes() == fp32.parameter_bytes());
    // The optimizer's slice: the master beside the two moments, 12 bytes a parameter, not 8.
    CHECK(2 * third.optimizer_state_bytes() == 3 * fp32.optimizer_state_bytes());
    CHECK(2 * second.parameter_bytes() ==
          Trainer(testing::plan_for(config, context), context).parameter_bytes());
  }
}

TEST_CASE("bf16 working weights: ZeRO-2 with one micro-batch a step is ZeRO-1 bit for bit",
          "[mpi][zero]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  Config config = testing::tiny_gpt_config(1, 1, "1f1b", 1);
  config.train.global_batch = 2 * n;
  ParallelContext context(world, ParallelLayout::from_config(config.parallel, n));
  const Config zero1 = bf16_weights(config, ShardLevel::kOptimizer);
  Trainer first(testing::plan_for(zero1, context), context);
  const Run expected = train(first, zero1, 0, 4);
  const Config zero2 = bf16_weights(config, ShardLevel::kGradients);
  Trainer second(testing::plan_for(zero2, context), context);
  const Run got = train(second, zero2, 0, 4);
  CHECK(got.losses == expected.losses);
  CHECK(got.norms == expected.norms);
  CHECK(same_tensors(saved_parameters(second), saved_parameters(first)));
}

TEST_CASE("a bf16-weight checkpoint holds the fp32 master and resumes in fp32 and back",
          "[mpi][zero]") {
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  std::shared_ptr<Communicator> self = MpiCommunicator::self();
  ParallelContext wide(world, ParallelLayout::create(n, 1, 1));
  ParallelContext single(self, ParallelLayout::create(1, 1, 1));
  Config config = testing::tiny_gpt_config(1, 1, "1f1b", 1);
  config.train.global_batch = 8 * n;
  config.train.precision = Precision::kBf16;
  // bf16 weights at ZeRO-3 over dp n, 3 steps; saved; resumed in a fresh run, the same numbers
  // as an uninterrupted run's (master, moments and step restored).
  const Config zero3 = bf16_weights(config, ShardLevel::kParameters);
  Trainer uninterrupted(testing::plan_for(zero3, wide), wide);
  const Run whole = train(uninterrupted, zero3, 0, 5);
  Trainer first(testing::plan_for(zero3, wide), wide);
  train(first, zero3, 0, 3);
  const auto saved = as_map(first.checkpoint_contents());  // collective over dp
  {
    Trainer again(testing::plan_for(zero3, wide), wide);
    again.load_state_tensors(saved);
    const Run rest = train(again, zero3, 3, 2);
    CHECK(rest.losses == std::vector<double>(whole.losses.begin() + 3, whole.losses.end()));
    CHECK(rest.norms == std::vector<double>(whole.norms.begin() + 3, whole.norms.end()));
  }
  const auto master = saved_parameters(first);
  for (const auto& [name, value] : master) {
    INFO(name);
    CHECK(value.scalar_type() == torch::kFloat);
    CHECK(torch::equal(saved.at(name), value));
  }
  // Into fp32 weights on one process: every saved tensor comes back as it was.
  Config fp32 = config;
  fp32.ddp.shard = ShardLevel::kOptimizer;
  Trainer second(testing::plan_for(fp32, single), single);
  second.load_state_tensors(saved);
  const auto reloaded = as_map(second.checkpoint_contents());
  for (const auto& [name, value] : saved) {
    if (name.find("rng") != std::string::npos) continue;
    INFO(name);
    CHECK(torch::equal(reloaded.at(name), value));
  }
  train(second, fp32, 3, 2);
  // And from fp32 back into bf16 weights at ZeRO-2 over dp n: the master is the saved fp32
  // value, the working weight its rounding.
  const auto saved_fp32 = as_map(second.checkpoint_contents());
  const Config zero2 = bf16_weights(config, ShardLevel::kGradients);
  Trainer third(testing::plan_for(zero2, wide), wide);
  third.load_state_tensors(saved_fp32);
  const auto master_again = saved_parameters(third);
  const auto working = working_weights(third);
  for (const auto& [name, value] : master_again) {
    INFO(name);
    CHECK(torch::equal(value, saved_fp32.at(name)));
    CHECK(torch::equal(working.at(name), value.to(torch::kBFloat16)));
  }
  const Run after = train(third, zero2, 5, 2);
  for (double loss : after.losses) CHECK(std::isfinite(loss));
}
