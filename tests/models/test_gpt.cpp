// The GPT at tp = world size (mpiexec -n 1, 2, 4) against the same GPT unsharded (tp = 1 over
// MPI_COMM_SELF): the loss and every parameter's gradient (each rank's shard of it), for a
// vocabulary tp divides and one it does not, with a tied and an untied head.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "models/gpt.h"
#include "parallel/comm/counting_communicator.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/tp/shard_spec.h"
#include "support/gradient_match.h"
#include "support/tolerance.h"

using namespace triax;

namespace {

GptOptions tiny(int64_t vocab, bool tied) {
  GptOptions options;
  options.vocab = vocab;
  options.hidden = 32;
  options.heads = 4;
  options.layers = 2;
  options.seq_len = 8;
  options.tie_embeddings = tied;
  options.seed = 99;
  return options;
}

std::pair<torch::Tensor, torch::Tensor> batch(int64_t vocab) {
  torch::manual_seed(1);
  const torch::Tensor tokens = torch::randint(0, vocab, {2, 9}, torch::kLong);
  return {tokens.narrow(1, 0, 8).contiguous(), tokens.narrow(1, 1, 8).contiguous()};
}

}  // namespace

TEST_CASE("GPT loss and every gradient equal the unsharded model", "[mpi][gpt]") {
  auto tp = MpiCommunicator::world();
  auto single = MpiCommunicator::self();
  for (int64_t vocab : {int64_t{32}, int64_t{13}}) {
    for (bool tied : {true, false}) {
      INFO("tp=" << tp->size() << " vocab=" << vocab << " tied=" << tied);
      Gpt full(tiny(vocab, tied), *single);
      Gpt sharded(tiny(vocab, tied), *tp);
      const auto [ids, targets] = batch(vocab);
      const torch::Tensor loss_full = full->loss(ids, targets);
      const torch::Tensor loss = sharded->loss(ids, targets);
      TRIAX_CHECK_CLOSE(loss, loss_full);
      CHECK(loss.item<double>() == Approx(std::log(static_cast<double>(vocab))).epsilon(0.1));
      loss_full.backward();
      loss.backward();

      const int compared = test::check_gradients_match(*sharded, *full, tp->rank(), tp->size());
      CHECK(compared == static_cast<int>(full->parameters().size()));
    }
  }
}

TEST_CASE("full logits gather to the unsharded logits", "[mpi][gpt]") {
  auto tp = MpiCommunicator::world();
  auto single = MpiCommunicator::self();
  Gpt full(tiny(13, true), *single);
  Gpt sharded(tiny(13, true), *tp);
  const auto ids = batch(13).first;
  torch::NoGradGuard no_grad;
  TRIAX_CHECK_CLOSE(sharded->full_logits(ids), full->full_logits(ids));
}

TEST_CASE("a model split by layer range computes the whole model", "[gpt]") {
  auto single = MpiCommunicator::self();
  for (bool tied : {true, false}) {
    Gpt whole(tiny(32, tied), *single);
    GptOptions first = tiny(32, tied);
    first.last_layer = 1;
    first.has_head = false;
    GptOptions second = tiny(32, tied);
    second.first_layer = 1;
    second.has_embedding = false;
    Gpt part1(first, *single);
    Gpt part2(second, *single);
    // Global layer names: the second part holds "layer1.*" and no "layer0.*".
    CHECK(part2->named_parameters().find("layer1.fc.weight") != nullptr);
    CHECK(part2->named_parameters().find("layer0.fc.weight") == nullptr);
    CHECK(part1->named_parameters().find("final_norm.weight") == nullptr);
    // Same numbers whatever part built them.
    CHECK(torch::equal(*part2->named_parameters().find("layer1.fc.weight"),
                       *whole->named_parameters().find("layer1.fc.weight")));
    const auto [ids, targets] = batch(32);
    const torch::Tensor loss =
        part2->loss_from_hidden(part2->run_layers(part1->run_layers(part1->embed(ids))), targets);
    TRIAX_CHECK_CLOSE(loss, whole->loss(ids, targets));
  }
}

TEST_CASE("with dropout 0 the model is deterministic; with dropout it is not", "[gpt]") {
  auto single = MpiCommunicator::self();
  GptOptions options = tiny(32, true);
  Gpt model(options, *single);
  const auto [ids, targets] = batch(32);
  CHECK(torch::equal(model->loss(ids, targets), model->loss(ids, targets)));
  options.dropout = 0.2;
  Gpt dropped(options, *single);
  CHECK_FALSE(torch::equal(dropped->loss(ids, targets), dropped->loss(ids, targets)));
  dropped->eval();
  CHECK(torch::equal(dropped->loss(ids, targets), model->loss(ids, targets)));
}

TEST_CASE("dropout streams: shared across tp ranks outside the region, distinct inside",
          "[mpi][gpt]") {
  auto tp = MpiCommunicator::world();
  TpDropout dropout(5, tp->rank());
  const torch::Tensor ones = torch::ones({64});
  const torch::Tensor shared = tp->all_gather(dropout.shared(ones, 0.5, true).unsqueeze(0));
  const torch::Tensor local = tp->all_gather(dropout.tp_local(ones, 0.5, true).unsqueeze(0));
  for (int r = 1; r < tp->size(); ++r) {
    CHECK(torch::equal(shared[r], shared[0]));
    CHECK_FALSE(torch::equal(local[r], local[0]));
  }
  CHECK(torch::equal(dropout.shared(ones, 0.5, false), ones));  // eval: identity
}

TEST_CASE("invalid GPT layouts name the keys and the valid values", "[gpt]") {
  Config config;
  config.model.arch = ModelKind::kGpt;
  config.model.hidden = 48;
  config.model.heads = 6;
  config.parallel.tensor = 4;
  CHECK_THROWS_WITH(
      check_gpt_layout(config),
      Catch::Contains("parallel.tensor: 4 does not divide model.heads=6 (valid: 1, 2, 3, 6)"));
  config.parallel.tensor = 1;
  config.model.heads = 5;
  CHECK_THROWS_WITH(check_gpt_layout(config),
                    Catch::Contains("model.heads: 5 does not divide model.hidden=48"));
  config.model.heads = 4;
  config.model.layers = 2;
  config.parallel.pipeline = 3;
  CHECK_THROWS_WITH(check_gpt_layout(config),
                    Catch::Contains("parallel.pipeline: 3 stages exceed model.layers=2"));
}

TEST_CASE("a GPT layer all-reduces 2 x b*s*h forward and 2 x b*s*h backward", "[mpi][gpt]") {
  auto world = MpiCommunicator::world();
  CountingCommunicator tp(*world);
  GptOptions options = tiny(32, true);
  TpDropout dropout(1, tp.rank());
  CausalBias causal_bias;
  GptBlock block(options, tp, dropout, causal_bias);
  const int64_t b = 2, s = 8, h = options.hidden;
  torch::Tensor x = torch::randn({b, s, h}).requires_grad_();
  const torch::Tensor y = block(x);
  const int64_t expected_calls = tp.size() == 1 ? 0 : 2;  // tp = 1 communicates nothing
  CHECK(tp.counts().all_reduce_calls == expected_calls);
  CHECK(tp.counts().all_reduce_bytes == expected_calls * b * s * h * 4);
  y.sum().backward();
  CHECK(tp.counts().all_reduce_calls == 2 * expected_calls);
  CHECK(tp.counts().all_reduce_bytes == 2 * expected_calls * b * s * h * 4);
  CHECK(tp.counts().all_gather_calls == 0);
}
