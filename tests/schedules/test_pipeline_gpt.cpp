// Pipelines against the unpipelined model (mpiexec -n 2 and 4): for each schedule (the
// zero-bubble ones with their split backward, ZB-V with its V placement), the GPT cut into
// p * v stages over the pipeline ranks (each stage itself tp-sharded when tp = 2) must give the
// loss and every parameter gradient of the whole model on the same global batch.
// Tolerance: kFp32Tol (support/tolerance.h); only the order of fp32 additions differs (the
// micro-batch sum, the tied embedding's two halves, tp reductions).
#include <catch2/catch.hpp>

#include "models/gpt.h"
#include "models/transformer_chunk.h"
#include "models/transformer_stages.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/parallel_context.h"
#include "parallel/tp/shard_spec.h"
#include "schedules/pipeline_executor.h"
#include "support/gradient_match.h"
#include "support/tolerance.h"

using namespace triax;

namespace {

constexpr int64_t kMicroBatch = 2;
constexpr int64_t kSeq = 8;

GptOptions whole_model(int64_t layers, bool tied) {
  GptOptions options;
  options.vocab = 13;  // not divisible by tp = 2: padding is exercised too
  options.hidden = 16;
  options.heads = 4;
  options.layers = layers;
  options.seq_len = kSeq;
  options.tie_embeddings = tied;
  options.seed = 21;
  return options;
}

void check_layout(int tp, int pp, const std::string& name, int m, int v, bool tied) {
  std::shared_ptr<Communicator> world = MpiCommunicator::world();
  ParallelContext context(world, ParallelLayout::create(world->size(), tp, pp));
  const GptOptions whole = whole_model(2 * pp * v, tied);
  torch::manual_seed(5);
  const torch::Tensor tokens =
      torch::randint(0, whole.vocab, {m * kMicroBatch, kSeq + 1}, torch::kLong);
  const auto ids = [&](int mb) {
    return tokens.narrow(0, mb * kMicroBatch, kMicroBatch).narrow(1, 0, kSeq);
  };
  const auto targets = [&](int mb) {
    return tokens.narrow(0, mb * kMicroBatch, kMicroBatch).narrow(1, 1, kSeq);
  };

  // Reference: the whole model, one process, the mean of the micro-batch losses.
  auto single = MpiCommunicator::self();
  Gpt reference(whole, *single);
  torch::Tensor reference_loss = torch::zeros({});
  for (int mb = 0; mb < m; ++mb)
    reference_loss = reference_loss + reference->loss(ids(mb), targets(mb)) / m;
  reference_loss.backward();

  // Pipelined: this rank's chunks are the stages the schedule places on it (a loop or a V).
  const Schedule schedule = make_schedule(name, pp, m, v);
  const auto ranges = split_layers(whole.layers, pp * v);
  std::vector<Gpt> chunks;
  for (int c = 0; c < v; ++c) {
    chunks.emplace_back(stage_options(whole, schedule.stage_of(context.pp_rank(), c), ranges),
                        context.tp());
  }
  StageFunctions stage;
  stage.forward = [&](int chunk, int mb, const torch::Tensor& input) {
    Gpt& part = chunks[static_cast<size_t>(chunk)];
    return part->run_layers(input.defined() ? input : part->embed(ids(mb)));
  };
  stage.loss = [&](int mb, const torch::Tensor& output) {
    return chunks.back()->loss_from_hidden(output, targets(mb));
  };
  PipelineExecutor executor(context.pp(), {kMicroBatch, kSeq, whole.hidden});
  const double loss = executor.run(schedule, stage);
  // A split backward's W adds to .grad itself: gradients are the same either way.
  all_reduce_tied_embedding_grads(
      chunks, schedule.placement().ends_on_one_rank() ? nullptr : context.embedding());

  CHECK(loss == Approx(reference_loss.item<double>()).epsilon(test::kFp32Tol));
  int compared = 0;
  for (auto& chunk : chunks)
    compared += test::check_gradients_match(*chunk, *reference, context.tp_rank(), tp);
  // Every parameter of the whole model is held by some stage (tied: the embedding twice).
  torch::Tensor count = torch::tensor({static_cast<int64_t>(compared)});
  context.pp().all_reduce(count);
  CHECK(count.item<int64_t>() ==
        static_cast<int64_t>(reference->parameters().size()) + (tied && pp * v > 1 ? 1 : 0));
}

}  // namespace

TEST_CASE("every schedule equals the unpipelined model: loss and every gradient",
          "[mpi][pipeline]") {
  const int n = MpiCommunicator::world()->size();
  struct Layout {
    int tp, pp;
  };
  std::vector<Layout> layouts{{1, n}};
  if (n == 4) layouts.push_back({2, 2});
  for (const Layout& layout : layouts) {
    const int p = layout.pp;
    for (bool tied : {true, false}) {
      for (int m : {1, 3, 2 * p}) {
        INFO("tp=" << layout.tp << " pp=" << p << " m=" << m << " tied=" << tied);
        {
          INFO("gpipe");
          check_layout(layout.tp, p, "gpipe", m, 1, tied);
        }
        {
          INFO("1f1b");
          check_layout(layout.tp, p, "1f1b", m, 1, tied);
        }
      }
      for (int m : {1, 3, 2 * p}) {
        INFO("zbh1 tp=" << layout.tp << " pp=" << p << " m=" << m << " tied=" << tied);
        check_layout(layout.tp, p, "zbh1", m, 1, tied);
      }
      for (int m : {1, 2 * p}) {
        INFO("zbv tp=" << layout.tp << " pp=" << p << " m=" << m << " tied=" << tied);
        check_layout(layout.tp, p, "zbv", m, 2, tied);
      }
      INFO("interleaved tp=" << layout.tp << " pp=" << p << " tied=" << tied);
      check_layout(layout.tp, p, "interleaved", 2 * p, 2, tied);
    }
  }
}

TEST_CASE("the executor rejects a broken schedule before communicating", "[mpi][pipeline]") {
  auto world = MpiCommunicator::world();
  Schedule broken = one_f_one_b(world->size(), 2);
  broken.ranks[0].pop_back();
  PipelineExecutor executor(*world, {1});
  CHECK_THROWS_WITH(executor.run(broken, StageFunctions{}), Catch::Contains("is invalid"));
}
