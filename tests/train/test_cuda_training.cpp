// run.device: cuda (docs/gpu.md) against the CPU: the same GPT and Llama take the same steps on
// the GPU (fp32: losses and every gradient within fp32 rounding of the CPU's, with and without
// dropout, whose masks come from the same host streams; without dropout the GPU's attention is
// LibTorch's fused kernel), a checkpoint's tensors move between the devices and the run goes
// on as if it had not moved, and bf16 autocast on the GPU tracks fp32's loss curve. Skipped,
// saying why, where LibTorch sees no CUDA device (Debian's LibTorch 1.13 is CPU-only).
#include <catch2/catch.hpp>

#include <torch/cuda.h>

#include "core/torch_compat.h"
#include "parallel/comm/mpi_communicator.h"
#include "support/tiny_gpt.h"
#include "support/tiny_llama.h"
#include "train/trainer.h"

using namespace triax;

namespace {

bool skip_without_gpu() {
  if (torch::cuda::is_available()) return false;
  WARN("SKIPPED: LibTorch sees no CUDA device (a CPU-only LibTorch or no GPU): docs/gpu.md");
  return true;
}

Config on(Config config, Device device) {
  config.run.device = device;
  return config;
}

struct Run {
  std::shared_ptr<Communicator> single = MpiCommunicator::self();
  ParallelContext context{single, ParallelLayout::create(1, 1, 1)};
  Trainer trainer;
  explicit Run(const Config& config) : trainer(testing::plan_for(config, context), context) {}
};

std::vector<torch::Tensor> gradients(Trainer& trainer) {
  std::vector<torch::Tensor> out;
  for (auto& chunk : trainer.chunks()) {
    for (const auto& p : chunk->module().parameters()) out.push_back(p.grad().cpu());
  }
  return out;
}

double relative(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = b.norm().item<double>();
  return scale == 0 ? a.norm().item<double>() : (a - b).norm().item<double>() / scale;
}

Config small(Config config, double dropout) {
  config.model.hidden = 64;
  config.model.dropout = dropout;
  config.train.clip_grad = 1.0;
  return config;
}

}  // namespace

TEST_CASE("a GPT and a Llama take the CPU's steps on CUDA", "[cuda][gpu]") {
  if (skip_without_gpu()) return;
  for (const auto family : {testing::tiny_gpt_config, testing::tiny_llama_config}) {
    for (const double dropout : {0.0, 0.1}) {
      const Config config = small(family(1, 1, "1f1b", 1), dropout);
      INFO(choice_name(config.model.arch) << " dropout " << dropout);
      Run cpu(on(config, Device::kCpu)), gpu(on(config, Device::kCuda));
      REQUIRE(gpu.trainer.device().is_cuda());
      REQUIRE(gpu.trainer.chunks()[0]->module().parameters()[0].is_cuda());
      const double cpu_loss = cpu.trainer.step(testing::tiny_gpt_batch(0, config));
      const double gpu_loss = gpu.trainer.step(testing::tiny_gpt_batch(0, config));
      CHECK(std::abs(gpu_loss - cpu_loss) <= 1e-5 * std::abs(cpu_loss));
      const auto cpu_grads = gradients(cpu.trainer), gpu_grads = gradients(gpu.trainer);
      REQUIRE(cpu_grads.size() == gpu_grads.size());
      double worst = 0;
      for (size_t k = 0; k < cpu_grads.size(); ++k) {
        worst = std::max(worst, relative(gpu_grads[k], cpu_grads[k]));
      }
      std::printf("[cuda] %s dropout %.1f: loss %.7f (cpu %.7f), worst gradient %.2e\n",
                  choice_name(config.model.arch).c_str(), dropout, gpu_loss, cpu_loss, worst);
      CHECK(worst < 1e-4);
      double a = 0, b = 0;
      for (int step = 1; step < 4; ++step) {
        a = cpu.trainer.step(testing::tiny_gpt_batch(step, config));
        b = gpu.trainer.step(testing::tiny_gpt_batch(step, config));
      }
      CHECK(std::abs(a - b) <= 1e-4 * std::abs(a));
    }
  }
}

TEST_CASE("a checkpoint's tensors move between CUDA and the CPU and the run goes on",
          "[cuda][gpu]") {
  if (skip_without_gpu()) return;
  const Config config = small(testing::tiny_gpt_config(1, 1, "1f1b", 1), 0.1);
  for (const Device from : {Device::kCuda, Device::kCpu}) {
    const Device to = from == Device::kCuda ? Device::kCpu : Device::kCuda;
    INFO("from " << choice_name(from) << " to " << choice_name(to));
    Run first(on(config, from));
    for (int step = 0; step < 2; ++step) first.trainer.step(testing::tiny_gpt_batch(step, config));
    std::map<std::string, torch::Tensor> saved;
    for (auto& [name, value] : materialize(first.trainer.checkpoint_contents())) {
      CHECK(value.device().is_cpu());  // what the checkpoint writer gets
      saved[name] = value.clone();
    }
    Run second(on(config, to));
    second.trainer.load_state_tensors(saved);
    const double went_on = first.trainer.step(testing::tiny_gpt_batch(2, config));
    const double moved = second.trainer.step(testing::tiny_gpt_batch(2, config));
    CHECK(std::abs(went_on - moved) <= 1e-5 * std::abs(went_on));
  }
}

TEST_CASE("bf16 autocast on CUDA follows fp32's loss curve", "[cuda][gpu]") {
  if (skip_without_gpu()) return;
  Config config = on(small(testing::tiny_gpt_config(1, 1, "1f1b", 1), 0.0), Device::kCuda);
  std::vector<double> curves[2];
  for (int i = 0; i < 2; ++i) {
    config.train.precision = i == 0 ? Precision::kFp32 : Precision::kBf16;
    Run run(config);
    for (int step = 0; step < 30; ++step) {
      curves[i].push_back(run.trainer.step(testing::tiny_gpt_batch(step, config)));
    }
    CHECK_FALSE(autocast_enabled(at::kCUDA));  // nothing leaks out of a step
  }
  double worst = 0;
  for (size_t s = 0; s < curves[0].size(); ++s) {
    worst = std::max(worst, std::abs(curves[1][s] - curves[0][s]) / curves[0][s]);
  }
  std::printf("[cuda] bf16: loss %.4f -> %.4f (fp32 %.4f -> %.4f), worst step %.2e relative\n",
              curves[1].front(), curves[1].back(), curves[0].front(), curves[0].back(), worst);
  CHECK(curves[1].back() < 0.8 * curves[1].front());  // it learns
  CHECK(worst < 2e-2);                                // within bf16's rounding of fp32
  CHECK(curves[1] != curves[0]);                      // and it did compute in bf16
}
