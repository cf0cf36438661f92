// Split backward (schedules/split_backward.h, Note [Split backward]) against the one-piece
// backward, on real model chunks: the first stage (embeddings, no input), a middle stage (an
// input that needs its gradient), the last stage (final norm, head, loss) and a whole model with
// tied embeddings, for the GPT and the Llama, in fp32 and under bf16 autocast. Every parameter
// gradient and the input gradient must be bit-identical; I must compute no parameter gradient
// (outside recomputed blocks) and W nothing but parameter gradients.
#include <catch2/catch.hpp>

#include "core/autocast_scope.h"
#include "parallel/comm/mpi_communicator.h"
#include "schedules/split_backward.h"
#include "support/tiny_gpt.h"
#include "support/tiny_llama.h"

using namespace triax;

namespace {

struct Grads {
  std::vector<torch::Tensor> params;
  torch::Tensor input;
};

// Runs one micro-batch (a forward and a backward of a scaled loss or a random output gradient)
// twice through the same chunk: once in one piece, once split; returns both.
std::pair<Grads, Grads> both_ways(ModelChunk& chunk, bool first, bool last, bool bf16,
                                  const Config& c) {
  const Batch batch = testing::tiny_gpt_batch(0, c);
  const Batch micro = batch.slice(0, 2);
  torch::manual_seed(5);
  const torch::Tensor received = torch::randn({2, c.model.seq_len, c.model.hidden});
  const torch::Tensor grad_out = torch::randn({2, c.model.seq_len, c.model.hidden});
  std::pair<Grads, Grads> out;
  for (int split = 0; split < 2; ++split) {
    Grads& g = split ? out.second : out.first;
    for (auto& p : chunk.module().parameters()) p.mutable_grad() = torch::zeros_like(p);
    torch::Tensor input = first ? torch::Tensor() : received.clone().requires_grad_();
    torch::Tensor y;
    {
      const AutocastScope precision(bf16);
      y = chunk.forward(input, micro);
      if (last) y = chunk.loss(y, micro) * 0.25;
    }
    const torch::Tensor grad = last ? torch::Tensor() : grad_out;
    if (!split) {
      if (last) {
        y.backward();
      } else {
        torch::autograd::backward({y}, {grad});
      }
      if (!first) g.input = input.grad().clone();
    } else {
      DeferredWeights deferred;
      g.input = backward_input(y, grad, input, &deferred);
      // I touched no parameter: every .grad is still zero.
      for (auto& p : chunk.module().parameters()) CHECK(p.grad().abs().sum().item<double>() == 0);
      CHECK_FALSE(deferred.empty());
      const auto updated = backward_weight(&deferred);
      CHECK(updated.size() == chunk.module().parameters().size());
      if (!first) CHECK_FALSE(input.grad().defined());  // I captured it; nothing accumulated
    }
    for (auto& p : chunk.module().parameters()) g.params.push_back(p.grad().clone());
  }
  return out;
}

void check_family(const Config& base, const char* family) {
  std::shared_ptr<Communicator> self = MpiCommunicator::self();
  const ModelSpec& spec = model_spec(base.model.arch);
  for (bool bf16 : {false, true}) {
    for (int pp : {1, 2, 4}) {
      Config c = base;
      c.parallel.pipeline = pp;
      const auto layers = spec.stage_layers(c);
      for (int stage = 0; stage < pp; ++stage) {
        INFO(family << " bf16 " << bf16 << " pp " << pp << " stage " << stage);
        auto chunk = spec.build_chunk(c, stage, layers, *self);
        const auto [whole, split] = both_ways(*chunk, stage == 0, stage == pp - 1, bf16, c);
        REQUIRE(whole.params.size() == split.params.size());
        const auto names = chunk->module().named_parameters();
        for (size_t k = 0; k < whole.params.size(); ++k) {
          INFO(names[k].key());
          CHECK(whole.params[k].abs().sum().item<double>() > 0);
          CHECK(torch::equal(whole.params[k], split.params[k]));
        }
        if (stage > 0) CHECK(torch::equal(whole.input, split.input));
      }
    }
  }
}

}  // namespace

TEST_CASE("split backward gives the one-piece backward's bits", "[split_backward]") {
  Config gpt = testing::tiny_gpt_config(1, 1, "1f1b", 1);
  check_family(gpt, "gpt");
  gpt.model.tie_embeddings = true;  // the embedding reached twice on one stage (pp = 1)
  check_family(gpt, "gpt tied");
  check_family(testing::tiny_llama_config(1, 1, "1f1b", 1), "llama");
}
