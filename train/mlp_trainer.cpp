#include "train/mlp_trainer.h"

#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "core/log.h"
#include "data/distributed_sampler.h"
#include "train/lr_schedule.h"
#include "train/optim/replicated_optimizer.h"

namespace triax {
namespace {

constexpr int64_t kImagePixels = 28 * 28;
constexpr int64_t kClasses = 10;

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

MlpTrainer::MlpTrainer(const RunPlan& plan, ParallelContext& context)
    : plan_(plan), context_(context), train_data_(*plan.images), test_data_(*plan.test_images) {
  TRIAX_CHECK(
      plan.model == ModelKind::kMlp && plan.has_data && plan.layout.dp_size() == context.dp_size(),
      "MlpTrainer: needs an MLP plan with its data, for this context's layout");
  torch::manual_seed(static_cast<uint64_t>(plan_.config.train.seed));
  model_ = Mlp(MlpOptions(kImagePixels, plan_.config.model.mlp_hidden, kClasses));
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : model_->named_parameters()) named.emplace_back(item.key(), item.value());
  sync_ = make_gradient_sync(
      std::move(named), context_.dp_gradients(), plan_.config.ddp);
  sync_->broadcast_parameters();
  optimizer_ = make_torch_optimizer(plan_.config.train, model_->parameters());
}

double MlpTrainer::train_step(const std::vector<int64_t>& rank_indices, int64_t step_in_epoch) {
  const BatchPlan& batch = plan_.batch;
  sync_->zero_grad();
  const int64_t first = step_in_epoch * batch.local_batch;
  double loss_sum = 0;
  for (int64_t m = 0; m < batch.num_microbatches; ++m) {
    const auto begin = rank_indices.begin() + first + m * batch.micro_batch;
    const torch::Tensor index =
        torch::tensor(std::vector<int64_t>(begin, begin + batch.micro_batch), torch::kLong);
    const torch::Tensor logits = model_->forward(train_data_.images(index));
    // Sum over the micro-batch / local batch: the accumulated gradient is this rank's mean.
    const torch::Tensor loss =
        torch::nn::functional::cross_entropy(
            logits, train_data_.labels.index_select(0, index),
            torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)) /
        static_cast<double>(batch.local_batch);
    sync_->set_sync(m + 1 == batch.num_microbatches);
    loss.backward();
    loss_sum += loss.item<double>();
  }
  sync_->finish();
  optimizer_->step();
  // The step's loss over the global batch: the mean of the ranks' local means.
  torch::Tensor global_loss = torch::tensor({loss_sum}, torch::kDouble);
  context_.dp().all_reduce(global_loss, ReduceOp::kAvg);
  return global_loss.item<double>();
}

TrainResult MlpTrainer::train() {
  const TrainConfig& train = plan_.config.train;
  const int64_t total_steps = plan_.data.total_steps;
  const int64_t steps_per_epoch = plan_.data.steps_per_epoch;
  log::info(str("training: ", plan_.batch.describe(), "; ", steps_per_epoch,
                " steps per epoch over ", train_data_.size(), " samples; ", total_steps, " steps"));
  DistributedSampler sampler(DistributedSamplerOptions{train_data_.size(), context_.dp_size(),
                                                       context_.dp_rank(), train.shuffle,
                                                       train.seed, false});
  TrainResult result;
  model_->train();
  const auto start = Clock::now();
  auto interval_start = start;
  int64_t interval_steps = 0;
  double interval_loss = 0;  // one batch's loss is noisy: print the interval's mean
  for (int64_t step = 0; step < total_steps;) {
    const int64_t epoch = step / steps_per_epoch;
    sampler.set_epoch(epoch);
    const std::vector<int64_t> indices = sampler.indices();
    for (int64_t s = step % steps_per_epoch; s < steps_per_epoch && step < total_steps; ++s) {
      set_learning_rate(*optimizer_, learning_rate(train, step, total_steps));
      result.step_losses.push_back(train_step(indices, s));
      ++step;
      ++interval_steps;
      interval_loss += result.step_losses.back();
      if (train.log_every > 0 && (step % train.log_every == 0 || step == total_steps)) {
        const double rate =
            interval_steps * plan_.batch.global_batch / seconds_since(interval_start);
        char line[160];
        std::snprintf(line, sizeof(line), "epoch %lld/%lld step %lld/%lld loss %.4f samples/s %.0f",
                      static_cast<long long>(epoch + 1), static_cast<long long>(train.epochs),
                      static_cast<long long>(step), static_cast<long long>(total_steps),
                      interval_loss / interval_steps, rate);
        log::info(line);
        interval_start = Clock::now();
        interval_steps = 0;
        interval_loss = 0;
      }
    }
  }
  result.steps = total_steps;
  result.train_seconds = seconds_since(start);
  result.samples_per_second =
      result.train_seconds > 0 ? total_steps * plan_.batch.global_batch / result.train_seconds : 0;
  result.test_accuracy = evaluate(&result.test_samples);
  char line[200];
  std::snprintf(line, sizeof(line),
                "done: %lld steps in %.2f s, %.0f samples/s (dp=%d); test accuracy %.2f%% on %lld "
                "samples",
                static_cast<long long>(result.steps), result.train_seconds,
                result.samples_per_second, context_.dp_size(), 100.0 * result.test_accuracy,
                static_cast<long long>(result.test_samples));
  log::info(line);
  return result;
}

double MlpTrainer::evaluate(int64_t* samples_out) {
  torch::NoGradGuard no_grad;
  model_->eval();
  DistributedSampler sampler(DistributedSamplerOptions{test_data_.size(), context_.dp_size(),
                                                       context_.dp_rank(), /*shuffle=*/false, 0,
                                                       /*drop_last=*/false, /*uneven=*/true});
  const torch::Tensor mine = torch::tensor(sampler.indices(), torch::kLong);
  double correct = 0;
  constexpr int64_t kEvalBatch = 1000;
  for (int64_t start = 0; start < mine.size(0); start += kEvalBatch) {
    const torch::Tensor index = mine.slice(0, start, std::min(start + kEvalBatch, mine.size(0)));
    const torch::Tensor predicted = model_->forward(test_data_.images(index)).argmax(1);
    correct += predicted.eq(test_data_.labels.index_select(0, index)).sum().item<double>();
  }
  torch::Tensor counts =
      torch::tensor({correct, static_cast<double>(mine.size(0))}, torch::kDouble);
  context_.dp().all_reduce(counts, ReduceOp::kSum);
  model_->train();
  if (samples_out != nullptr) *samples_out = static_cast<int64_t>(counts[1].item<double>());
  return counts[0].item<double>() / counts[1].item<double>();
}

}  // namespace triax
