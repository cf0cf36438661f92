// Each tensor-parallel layer, run with tp = the world size (mpiexec -n 1, 2, 4), against the
// same layer built unsharded (tp = 1, over MPI_COMM_SELF) from the same seed: outputs, input
// gradients, and each rank's weight gradient against its shard of the full gradient.
#include <catch2/catch.hpp>

#include "parallel/comm/mpi_communicator.h"
#include "parallel/tp/column_parallel_linear.h"
#include "parallel/tp/row_parallel_linear.h"
#include "parallel/tp/tp_mappings.h"
#include "parallel/tp/vocab_parallel_cross_entropy.h"
#include "parallel/tp/vocab_parallel_embedding.h"
#include "support/tolerance.h"

using namespace triax;

namespace {

struct Comms {
  std::unique_ptr<MpiCommunicator> tp = MpiCommunicator::world();
  std::unique_ptr<MpiCommunicator> single = MpiCommunicator::self();
};

// Same random tensor on every rank.
torch::Tensor seeded_randn(std::vector<int64_t> shape, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn(shape);
}

}  // namespace

TEST_CASE("ColumnParallelLinear equals the unsharded linear", "[mpi][tp]") {
  Comms c;
  for (bool gather : {false, true}) {
    for (int64_t stride : {1, 3}) {
      INFO("tp=" << c.tp->size() << " gather_output=" << gather << " stride=" << stride);
      const auto options =
          ColumnParallelLinearOptions(8, 12 * c.tp->size()).gather_output(gather).stride(stride);
      torch::manual_seed(11);
      ColumnParallelLinear full(ColumnParallelLinearOptions(options).gather_output(false),
                                *c.single);
      torch::manual_seed(11);
      ColumnParallelLinear sharded(options, *c.tp);
      const ShardSpec spec = sharded->shard_specs().at("weight");

      torch::Tensor x_full = seeded_randn({2, 5, 8}, 1).requires_grad_();
      torch::Tensor x_sharded = x_full.detach().clone().requires_grad_();
      const torch::Tensor probe = seeded_randn({2, 5, options.out_features()}, 2);
      const torch::Tensor y_full = full(x_full);
      const torch::Tensor y = sharded(x_sharded);
      // Compare in the output's layout: gathered, or this rank's shard of the columns.
      const ShardSpec out_spec{2, stride, options.out_features(), options.out_features()};
      const torch::Tensor expected_y =
          gather ? y_full : shard_of(y_full, out_spec, c.tp->rank(), c.tp->size());
      TRIAX_CHECK_CLOSE(y, expected_y);
      (y_full * probe).sum().backward();
      (y * (gather ? probe : shard_of(probe, out_spec, c.tp->rank(), c.tp->size())))
          .sum()
          .backward();
      TRIAX_CHECK_CLOSE(x_sharded.grad(), x_full.grad());
      TRIAX_CHECK_CLOSE(sharded->weight.grad(),
                        shard_of(full->weight.grad(), spec, c.tp->rank(), c.tp->size()));
      TRIAX_CHECK_CLOSE(sharded->bias.grad(),
                        shard_of(full->bias.grad(), sharded->shard_specs().at("bias"), c.tp->rank(),
                                 c.tp->size()));
    }
  }
}

TEST_CASE("RowParallelLinear equals the unsharded linear", "[mpi][tp]") {
  Comms c;
  for (bool parallel_input : {false, true}) {
    INFO("tp=" << c.tp->size() << " input_is_parallel=" << parallel_input);
    const auto options =
        RowParallelLinearOptions(8 * c.tp->size(), 6).input_is_parallel(parallel_input);
    torch::manual_seed(12);
    RowParallelLinear full(RowParallelLinearOptions(options).input_is_parallel(false), *c.single);
    torch::manual_seed(12);
    RowParallelLinear sharded(options, *c.tp);

    torch::Tensor x_full = seeded_randn({3, 4, options.in_features()}, 3).requires_grad_();
    torch::Tensor x_sharded =
        (parallel_input ? split_last_dim(x_full, c.tp->rank(), c.tp->size()) : x_full)
            .detach()
            .clone()
            .requires_grad_();
    const torch::Tensor probe = seeded_randn({3, 4, 6}, 4);
    const torch::Tensor y = sharded(x_sharded);
    TRIAX_CHECK_CLOSE(y, full(x_full));
    (full(x_full) * probe).sum().backward();
    (y * probe).sum().backward();
    const torch::Tensor expected_x_grad =
        parallel_input ? split_last_dim(x_full.grad(), c.tp->rank(), c.tp->size()) : x_full.grad();
    TRIAX_CHECK_CLOSE(x_sharded.grad(), expected_x_grad);
    TRIAX_CHECK_CLOSE(sharded->weight.grad(),
                      shard_of(full->weight.grad(), sharded->shard_specs().at("weight"),
                               c.tp->rank(), c.tp->size()));
    // The bias is replicated and added once, after the reduction: its gradient is the full one.
    TRIAX_CHECK_CLOSE(sharded->bias.grad(), full->bias.grad());
  }
}

TEST_CASE("VocabParallelEmbedding equals the unsharded embedding, padded vocabulary too",
          "[mpi][tp]") {
  Comms c;
  for (int64_t vocab : {int64_t{16}, int64_t{13}}) {  // 13: not divisible by tp = 2 or 4
    INFO("tp=" << c.tp->size() << " vocab=" << vocab);
    torch::manual_seed(13);
    VocabParallelEmbedding full(VocabParallelEmbeddingOptions(vocab, 6), *c.single);
    torch::manual_seed(13);
    VocabParallelEmbedding sharded(VocabParallelEmbeddingOptions(vocab, 6), *c.tp);
    torch::manual_seed(5);
    const torch::Tensor ids = torch::randint(0, vocab, {4, 7}, torch::kLong);
    const torch::Tensor probe = seeded_randn({4, 7, 6}, 6);
    const torch::Tensor y = sharded(ids);
    TRIAX_CHECK_CLOSE(y, full(ids));
    (full(ids) * probe).sum().backward();
    (y * probe).sum().backward();
    const ShardSpec spec = sharded->shard_specs().at("weight");
    CHECK(spec.padded_size % c.tp->size() == 0);
    TRIAX_CHECK_CLOSE(sharded->weight.grad(),
                      shard_of(full->weight.grad(), spec, c.tp->rank(), c.tp->size()));
    CHECK_THROWS_WITH(sharded(torch::full({1}, vocab, torch::kLong)),
                      Catch::Contains("token ids must lie in [0,"));
  }
}

TEST_CASE("vocab-parallel cross-entropy equals cross_entropy on the full logits", "[mpi][tp]") {
  Comms c;
  const int tp = c.tp->size();
  for (int64_t vocab : {int64_t{20}, int64_t{17}}) {
    for (bool with_ignore : {false, true}) {
      INFO("tp=" << tp << " vocab=" << vocab << " ignore_index=" << with_ignore);
      const int64_t n = 9;
      const ShardSpec spec{1, 1, vocab, padded_vocab_size(vocab, tp)};
      torch::Tensor logits = (seeded_randn({n, vocab}, 7) * 3).requires_grad_();
      torch::manual_seed(8);
      torch::Tensor target = torch::randint(0, vocab, {n}, torch::kLong);
      if (with_ignore) target.index_put_({torch::tensor({1, 4})}, -100);
      const torch::Tensor expected =
          torch::nn::functional::cross_entropy(logits, target,
                                               torch::nn::functional::CrossEntropyFuncOptions()
                                                   .reduction(torch::kNone)
                                                   .ignore_index(-100));
      // Padding columns hold garbage on purpose: they must not matter.
      torch::Tensor local = shard_of(logits.detach(), spec, c.tp->rank(), tp);
      if (spec.padded_size > vocab && c.tp->rank() == tp - 1)
        local.narrow(1, local.size(1) - 1, 1).fill_(50);
      local.requires_grad_();
      const torch::Tensor loss = vocab_parallel_cross_entropy(local, target, *c.tp, vocab);
      TRIAX_CHECK_CLOSE(loss, expected);
      const torch::Tensor weights = seeded_randn({n}, 9);
      (expected * weights).sum().backward();
      (loss * weights).sum().backward();
      torch::Tensor expected_grad = shard_of(logits.grad(), spec, c.tp->rank(), tp);
      TRIAX_CHECK_CLOSE(local.grad(), expected_grad);  // padding columns: zero gradient
    }
  }
}

TEST_CASE("the f and g mappings: forward and backward", "[mpi][tp]") {
  Comms c;
  const int n = c.tp->size();
  const int r = c.tp->rank();
  torch::Tensor x = torch::full({2, 3}, r + 1.0).requires_grad_();
  const torch::Tensor copied = copy_to_tp_region(x, *c.tp);
  CHECK(torch::equal(copied, x));
  copied.backward(torch::ones({2, 3}));
  CHECK(torch::equal(x.grad(), torch::full({2, 3}, double(n))));  // summed over tp

  torch::Tensor y = torch::full({2, 3}, r + 1.0).requires_grad_();
  const torch::Tensor reduced = reduce_from_tp_region(y, *c.tp);
  CHECK(torch::equal(reduced, torch::full({2, 3}, n * (n + 1) / 2.0)));
  reduced.backward(torch::ones({2, 3}));
  CHECK(torch::equal(y.grad(), torch::ones({2, 3})));  // identity

  torch::Tensor z = torch::full({2, 2}, double(r)).requires_grad_();
  const torch::Tensor gathered = gather_from_tp_region(z, *c.tp);
  REQUIRE(gathered.sizes() == torch::IntArrayRef({2, 2 * n}));
  for (int q = 0; q < n; ++q) CHECK(gathered.narrow(1, 2 * q, 2).eq(q).all().item<bool>());
  gathered.backward(torch::arange(2 * 2 * n, torch::kFloat).view({2, 2 * n}));
  CHECK(torch::equal(z.grad(),
                     torch::arange(2 * 2 * n, torch::kFloat).view({2, 2 * n}).narrow(1, 2 * r, 2)));
}
