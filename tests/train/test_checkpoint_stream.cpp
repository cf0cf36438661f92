// A sharded optimizer's checkpoint is streamed (checkpoint/checkpoint.h): the dp ranks' slices
// reach the writer one bucket at a time, so no rank holds the position's whole state (nor, under
// ZeRO-3, its whole model) to save it. Under mpiexec -n 2, 4, 8, at ZeRO-1, ZeRO-3 and ZeRO-3 with
// bf16 working weights: the file a save writes holds exactly the tensors of the whole contents
// (materialize(), the gathered form), bit for bit; each rank's tensor memory grows during the
// save by less than a quarter of the position's state (a bucket here is 2 KB of a ~100 KB model);
// a background save's contents are a snapshot: a step taken before they are written does not
// reach the file; and a writer that cannot write still runs the stream, so no rank hangs.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "core/safetensors.h"
#include "core/tensor_memory.h"
#include "support/test_world.h"
#include "support/tiny_gpt.h"
#include "train/trainer.h"

using namespace triax;

namespace {

std::map<std::string, torch::Tensor> whole(Trainer& trainer) {
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, tensor] : materialize(trainer.checkpoint_contents()))
    out[name] = tensor.clone();
  return out;
}

// Step 2 of a save (dp rank 0 writes, the others stream) into `dir`: the file written on dp rank
// 0, "" elsewhere.
std::string write(ParallelContext& context, const std::string& dir, CheckpointContents contents) {
  if (context.dp_rank() != 0) {
    stream_checkpoint_shard(std::move(contents));
    return "";
  }
  return write_checkpoint_shard(ShardTarget{dir, 1, 0, 0}, std::move(contents)).shard.file;
}

std::map<std::string, torch::Tensor> read(const std::string& file) {
  const SafetensorsFile contents = load_safetensors(file);
  return {contents.tensors.begin(), contents.tensors.end()};
}

bool same(const std::map<std::string, torch::Tensor>& a,
          const std::map<std::string, torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, tensor] : a) {
    const auto it = b.find(name);
    if (it == b.end() || !tensor.equal(it->second)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a sharded checkpoint is streamed a bucket at a time, bit for bit", "[mpi][zero]") {
  TensorMemory::install();
  std::shared_ptr<Communicator> world = testing::test_world();
  const int n = world->size();
  ParallelContext context(world, ParallelLayout::create(n, 1, 1));
  const std::string dir = str("/tmp/triax-stream-", ::getpid());  // dp rank 0 writes in its own
  std::filesystem::create_directories(dir);
  const std::vector<std::pair<ShardLevel, bool>> cases{{ShardLevel::kOptimizer, false},
                                                       {ShardLevel::kParameters, false},
                                                       {ShardLevel::kParameters, true}};
  for (const auto& [level, bf16] : cases) {
    Config config = testing::tiny_gpt_config(1, 1, "1f1b", 1);
    config.model.hidden = 32;
    config.train.global_batch = 4 * n;
    config.ddp.shard = level;
    config.checkpoint.async = true;  // the trainer keeps a communicator for background streams
    if (bf16) {
      config.train.precision = Precision::kBf16;
      config.train.param_dtype = Precision::kBf16;
    }
    INFO("ddp.shard " << level << (bf16 ? " with bf16 weights" : ""));
    Trainer trainer(testing::plan_for(config, context), context);
    for (int step = 0; step < 2; ++step) trainer.step(testing::tiny_gpt_batch(step, config));
    const auto expected = whole(trainer);
    int64_t state_bytes = 0;  // the position's values and moments, whole
    for (const auto& [name, tensor] : expected)
      state_bytes += tensor.numel() * tensor.element_size();

    TensorMemory::reset_peak();
    const int64_t before = TensorMemory::live();
    const std::string file = write(context, dir, trainer.checkpoint_contents());
    const int64_t growth = TensorMemory::peak() - before;
    std::printf("[stream] dp %d %s%s: the save grew rank %d's tensors by %lld bytes of %lld\n", n,
                choice_name(level).c_str(), bf16 ? " bf16" : "", world->rank(),
                static_cast<long long>(growth), static_cast<long long>(state_bytes));
    CHECK(growth < state_bytes / 4);
    if (context.dp_rank() == 0) CHECK(same(read(file), expected));

    // A background save: the contents are a copy; the step after them does not reach the file.
    CheckpointContents snapshot = trainer.checkpoint_contents(/*background=*/true);
    trainer.step(testing::tiny_gpt_batch(2, config));
    const std::string later = write(context, dir, std::move(snapshot));
    if (context.dp_rank() == 0) CHECK(same(read(later), expected));
    CHECK_FALSE(same(whole(trainer), expected));  // the step did change the state

    // A writer that cannot write still runs the stream to its end: the other ranks' gathers
    // complete (no one waits for the timeout), and the writer raises its error after.
    if (context.dp_rank() == 0) {
      CHECK_THROWS_WITH(
          write_checkpoint_shard(ShardTarget{"/proc/triax-unwritable", 1, 0, 0},
                                 trainer.checkpoint_contents()),
          Catch::Contains("/proc/triax-unwritable") && Catch::Contains("cannot write"));
    } else {
      CHECK_NOTHROW(stream_checkpoint_shard(trainer.checkpoint_contents()));
    }
  }
  std::filesystem::remove_all(dir);
}
