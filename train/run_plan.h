// defines: triax::DataPlan, triax::DataCheck, triax::RunPlan, triax::plan_run
//
// Everything about a run that can be decided without communication, decided once. plan_run
// validates the configuration against the launch's world size in a fixed order (layout, the
// model's support of it, the batch arithmetic, the LR schedule, the pipeline schedule and its
// stage split, then the data files) and returns the result, which the trainers then only read:
//   layout      dp = world / (cp * tp * pp)                    (parallel/parallel_layout.h)
//   batch       global_batch = micro_batch * micro-batches * dp (train/batch_plan.h)
//   schedule    the checked pipeline schedule, and the layers of each stage (the model spec's)
//   facts       sequence parallelism in effect; the activation shapes between stages
//   data        the datasets, opened (and checksummed) once, and what they allow: steps per
//               epoch, total steps, evaluation batches
// Every rank computes the same plan and so reaches the same verdict: a mistake is one message
// per rank (ConfigError: key, value, rule, what is valid) before any communicator exists.
// `triax config CONFIG --world N` prints describe().
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/config.h"
#include "data/fashion_mnist.h"
#include "data/gpt_corpus.h"
#include "parallel/parallel_layout.h"
#include "schedules/schedule.h"
#include "train/batch_plan.h"

namespace triax {

/// What the datasets allow, for the batch the plan holds.
struct DataPlan {
  int64_t train_samples = 0;    ///< GPT: sequences of seq_len + 1 tokens; MLP: images
  int64_t val_samples = 0;      ///< held-out (GPT: val.tok) or test (MLP: t10k) samples
  int64_t steps_per_epoch = 0;  ///< floor(train_samples / global_batch)
  int64_t total_steps = 0;      ///< train.steps, or epochs * steps_per_epoch
  int64_t eval_batches = 0;     ///< GPT: global batches of val.tok per evaluation
};

/// Whether plan_run opens the datasets: always (training), never (tests that feed batches
/// themselves), or when they are there (`triax config`, which reports a problem instead of
/// failing on it).
enum class DataCheck { kOpen, kSkip, kIfPresent };

struct RunPlan {
  Config config;
  ModelKind model = ModelKind::kGpt;
  ParallelLayout layout = ParallelLayout::create(1, 1, 1);
  BatchPlan batch;
  Schedule schedule;                                      ///< the pipeline schedule
  std::vector<std::pair<int64_t, int64_t>> stage_layers;  ///< [first, last) per stage
  bool sequence_parallel = false;         ///< parallel.sequence in effect (tp > 1): training splits
                                          ///< activations along the sequence
  std::vector<int64_t> activation_shape;  ///< one micro-batch between stages, training
  std::vector<int64_t> eval_activation_shape;  ///< the same in evaluation (whole sequences)
  bool has_data = false;                       ///< the datasets below are open
  std::string data_note;                       ///< why not, for describe()
  DataPlan data;
  std::shared_ptr<const GptCorpus> corpus;                  ///< GPT
  std::shared_ptr<const FashionMnist> images, test_images;  ///< MLP

  /// The layout table, batch plan, numerics guarantee, pipeline schedule (table, stage split,
  /// simulated bubble) and data plan, as `triax config --world N` prints them.
  std::string describe() const;
  /// train.numerics in one line: which layouts give this run's bits (docs/numerics.md).
  std::string numerics_guarantee() const;
};

/// Throws ConfigError on the first rule the configuration breaks for `world_size` ranks.
/// Schedules already built and checked, by (kind, stages, micro-batches, chunks per rank): a
/// planner plans thousands of layouts that share a few schedules (plan/candidate.h), on several
/// threads (plan_layouts), hence the lock.
struct ScheduleCache {
  std::mutex lock;
  std::map<std::tuple<int, int, int, int>, Schedule> schedules;
};

/// The ranks that train out of `world_size`: all of them, but for dedicated parameter servers
/// (ddp.mode: parameter_server), which take parameter_server.servers per model position. Throws
/// ConfigError when what is left is not a positive multiple of a replica's ranks.
int training_ranks(const Config& config, int world_size);

/// `schedules`: where to find and keep the schedule (null: build it).
RunPlan plan_run(const Config& config, int world_size, DataCheck data = DataCheck::kOpen,
                 ScheduleCache* schedules = nullptr);

}  // namespace triax
