// train.precision: bf16 on one process: the parameters stay the fp32 master weights and their
// gradients arrive in fp32; one step's loss and gradients equal fp32's within bf16's rounding
// (bf16 keeps 8 significant bits: epsilon 2^-8 = 3.9e-3 relative per rounding; measured: worst
// parameter gradient 8.0e-3 GPT, 8.9e-3 Llama, loss 6e-6 and 4e-5 relative); recompute
// (full and selective) replays the bf16 forward exactly, so it stays bit-identical to bf16
// without recompute; autocast does not leak out of the step.
#include <catch2/catch.hpp>

#include "core/torch_compat.h"

#include "parallel/comm/mpi_communicator.h"
#include "support/tiny_gpt.h"
#include "support/tiny_llama.h"
#include "train/trainer.h"

using namespace triax;

namespace {

struct OneStep {
  double loss = 0;
  std::vector<torch::Tensor> grads;
  std::vector<torch::Tensor> params;
};

OneStep one_step(Config config, Precision precision, Recompute recompute) {
  config.train.precision = precision;
  config.train.recompute = recompute;
  config.train.clip_grad = 0;  // the raw gradients
  std::shared_ptr<Communicator> single = MpiCommunicator::self();
  ParallelContext context(single, ParallelLayout::create(1, 1, 1));
  Trainer trainer(testing::plan_for(config, context), context);
  OneStep out;
  out.loss = trainer.step(testing::tiny_gpt_batch(0, config));
  for (auto& chunk : trainer.chunks()) {
    for (const auto& p : chunk->module().parameters()) {
      out.grads.push_back(p.grad().clone());
      out.params.push_back(p.detach().clone());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("bf16 trains fp32 master weights with gradients within bf16 rounding of fp32's",
          "[bf16]") {
  for (const auto family : {testing::tiny_gpt_config, testing::tiny_llama_config}) {
    Config config = family(1, 1, "1f1b", 1);
    config.model.hidden = 64;  // matmuls long enough for rounding to average out
    INFO(choice_name(config.model.arch));
    const OneStep fp32 = one_step(config, Precision::kFp32, Recompute::kNone);
    const OneStep bf16 = one_step(config, Precision::kBf16, Recompute::kNone);
    CHECK_FALSE(autocast_enabled(at::kCPU));  // nothing leaks out of the step
    CHECK(std::abs(bf16.loss - fp32.loss) / fp32.loss < 5e-3);
    CHECK(bf16.loss != fp32.loss);  // it did compute in bf16
    double worst = 0;
    for (size_t k = 0; k < fp32.grads.size(); ++k) {
      REQUIRE(bf16.grads[k].scalar_type() == torch::kFloat);
      REQUIRE(bf16.params[k].scalar_type() == torch::kFloat);
      const double scale = fp32.grads[k].norm().item<double>();
      if (scale == 0) continue;
      worst = std::max(worst, (bf16.grads[k] - fp32.grads[k]).norm().item<double>() / scale);
    }
    std::printf("[bf16] %s: loss %.6f (fp32 %.6f), worst gradient relative error %.2e\n",
                choice_name(config.model.arch).c_str(), bf16.loss, fp32.loss, worst);
    CHECK(worst < 3e-2);  // a few bf16 epsilons
    CHECK(worst > 1e-4);  // and not fp32 by accident
    for (Recompute recompute : {Recompute::kFull, Recompute::kSelective}) {
      const OneStep again = one_step(config, Precision::kBf16, recompute);
      CHECK(again.loss == bf16.loss);
      bool same = true;
      for (size_t k = 0; k < bf16.grads.size(); ++k)
        same = same && again.grads[k].equal(bf16.grads[k]);
      CHECK(same);
    }
  }
}
