#include "train/batch_source.h"

#include "core/error.h"
#include "data/distributed_sampler.h"
#include "data/local_batches.h"
#include "models/gpt_spec.h"

namespace triax {
namespace {

// Layout-invariant numerics deal each rank a contiguous block of the global batch (the global
// micro-batch index then does not depend on dp: DistributedSampler::block_rows).
bool block_deal(const RunPlan& plan) {
  return plan.config.train.numerics == Numerics::kLayoutInvariant;
}

class TokenBatches : public BatchSource {
 public:
  TokenBatches(const RunPlan& plan, int dp_rank)
      : train_(plan.corpus->train, plan.batch.global_batch, plan.batch.dp, dp_rank,
               plan.config.train.shuffle, plan.config.train.seed, block_deal(plan)),
        held_out_(plan.corpus->val, plan.batch.global_batch, plan.batch.dp, dp_rank,
                  /*shuffle=*/false, 0, block_deal(plan)),
        eval_batches_(plan.data.eval_batches),
        microbatches_(static_cast<int>(plan.batch.num_microbatches)),
        in_blocks_(block_deal(plan)) {}
  Batch train_batch(int64_t step) override {
    Batch batch = token_batch(train_.local(step));
    batch.samples = train_.sample_ids(step);  // AutoCache's keys
    return batch;
  }
  int64_t eval_batches() const override { return eval_batches_; }
  EvalBatch eval_batch(int64_t k) override {
    return EvalBatch{token_batch(held_out_.local(k)), microbatches_};
  }
  bool eval_in_blocks() const override { return in_blocks_; }

 private:
  LocalBatches train_, held_out_;
  int64_t eval_batches_;
  int microbatches_;
  bool in_blocks_;
};

class ImageBatches : public BatchSource {
 public:
  static constexpr int64_t kEvalBatch = 1000;

  ImageBatches(const RunPlan& plan, int dp_rank)
      : train_(*plan.images),
        test_(*plan.test_images),
        // The block deal reads the epoch's whole order and takes this rank's block of each batch.
        sampler_(DistributedSamplerOptions{train_.size(), block_deal(plan) ? 1 : plan.batch.dp,
                                           block_deal(plan) ? 0 : dp_rank,
                                           plan.config.train.shuffle, plan.config.train.seed,
                                           /*drop_last=*/false}),
        local_batch_(plan.batch.local_batch),
        stride_(block_deal(plan) ? plan.batch.global_batch : plan.batch.local_batch),
        offset_(block_deal(plan) ? dp_rank * plan.batch.local_batch : 0),
        per_epoch_(plan.data.steps_per_epoch) {
    DistributedSampler test_sampler(DistributedSamplerOptions{
        test_.size(), plan.batch.dp, dp_rank, /*shuffle=*/false, 0, /*drop_last=*/false,
        /*uneven=*/true});
    test_indices_ = torch::tensor(test_sampler.indices(), torch::kLong);
  }
  Batch train_batch(int64_t step) override {
    const int64_t epoch = step / per_epoch_;
    if (epoch != epoch_) {
      sampler_.set_epoch(epoch);
      indices_ = sampler_.indices();
      epoch_ = epoch;
    }
    const auto first = indices_.begin() + (step % per_epoch_) * stride_ + offset_;
    return rows(train_, torch::tensor(std::vector<int64_t>(first, first + local_batch_)));
  }
  int64_t eval_batches() const override {
    return (test_indices_.size(0) + kEvalBatch - 1) / kEvalBatch;
  }
  EvalBatch eval_batch(int64_t k) override {
    const int64_t start = k * kEvalBatch;
    const int64_t count = std::min(kEvalBatch, test_indices_.size(0) - start);
    return EvalBatch{rows(test_, test_indices_.narrow(0, start, count)), 1};
  }

 private:
  static Batch rows(const FashionMnist& data, const torch::Tensor& index) {
    return Batch{data.images(index), data.labels.index_select(0, index)};
  }
  const FashionMnist& train_;
  const FashionMnist& test_;
  DistributedSampler sampler_;
  int64_t local_batch_, stride_, offset_, per_epoch_;
  int64_t epoch_ = -1;
  std::vector<int64_t> indices_;
  torch::Tensor test_indices_;
};

}  // namespace

std::unique_ptr<BatchSource> make_batch_source(const RunPlan& plan, int dp_rank) {
  TRIAX_CHECK(plan.has_data, "make_batch_source: the plan's data is not open");
  switch (model_spec(plan.model).data) {
    case DataSource::kTokenFiles:
      return std::make_unique<TokenBatches>(plan, dp_rank);
    case DataSource::kFashionMnist:
      return std::make_unique<ImageBatches>(plan, dp_rank);
  }
  throw Error("make_batch_source: unknown data source");
}

}  // namespace triax
