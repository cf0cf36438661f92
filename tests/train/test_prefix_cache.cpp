// AutoCache's rows (train/prefix_cache.h): what is stored comes back bit for bit; a slot never
// written, a row computed from other tokens, a torn record and rows past the end read as misses;
// and the chunk computes only the rows the cache missed (models/transformer_chunk.h).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "core/strings.h"
#include "models/model_spec.h"
#include "parallel/comm/gather_text.h"
#include "parallel/comm/mpi_communicator.h"
#include "support/tiny_gpt.h"
#include "train/prefix_cache.h"

using namespace triax;

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/triax_prefix_cache_XXXXXX";
    path = ::mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

torch::Tensor ids(std::vector<int64_t> v) {
  return torch::tensor(v, torch::kLong);
}

}  // namespace

TEST_CASE("prefix cache rows come back bit for bit; others miss", "[autocache]") {
  TempDir dir;
  const std::string file = dir.path + "/rows";
  FilePrefixCache cache(file, 2, {3, 4}, torch::kFloat, {});
  CHECK(cache.layers() == 2);
  const torch::Tensor tokens = torch::randint(0, 256, {3, 5}, torch::kLong);
  const torch::Tensor rows = torch::randn({3, 3, 4});
  torch::Tensor hidden;
  // Nothing written yet: every row misses (past the end of the file).
  CHECK(cache.fetch(ids({7, 2, 9}), tokens, &hidden).any().item<bool>() == false);
  cache.store(ids({7, 2, 9}), tokens, rows);
  const torch::Tensor hit = cache.fetch(ids({7, 2, 9}), tokens, &hidden);
  CHECK(hit.all().item<bool>());
  CHECK(torch::equal(hidden, rows));
  // Another order, and a sample in a slot never written (a hole of the sparse file).
  const torch::Tensor some =
      cache.fetch(ids({9, 5, 7}), tokens.index_select(0, ids({2, 1, 0})), &hidden);
  CHECK(some[0].item<bool>());
  CHECK_FALSE(some[1].item<bool>());
  CHECK(some[2].item<bool>());
  CHECK(torch::equal(hidden[0], rows[2]));
  CHECK(torch::equal(hidden[2], rows[0]));
  CHECK(cache.hits() == 3 + 2);
  CHECK(cache.misses() == 3 + 1);

  SECTION("a row computed from other tokens misses") {
    torch::Tensor other = tokens.clone();
    other[1][4] = (other[1][4].item<int64_t>() + 1) % 256;
    const torch::Tensor h = cache.fetch(ids({7, 2, 9}), other, &hidden);
    CHECK(h[0].item<bool>());
    CHECK_FALSE(h[1].item<bool>());
  }
  SECTION("a damaged row misses") {
    // Flip a byte inside sample 2's row (record = 16-byte header + 3 x 4 floats).
    const int64_t record = 16 + 3 * 4 * 4;
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2 * record + 16 + 5);
    f.put('\x5a');
    f.close();
    const torch::Tensor h = cache.fetch(ids({2, 7}), tokens.index_select(0, ids({1, 0})), &hidden);
    CHECK_FALSE(h[0].item<bool>());
    CHECK(h[1].item<bool>());
  }
  SECTION("a second cache on the same file reads what the first wrote") {
    FilePrefixCache again(file, 2, {3, 4}, torch::kFloat, {});
    CHECK(again.fetch(ids({2}), tokens.narrow(0, 1, 1), &hidden).all().item<bool>());
    CHECK(torch::equal(hidden[0], rows[1]));
  }
  SECTION("rows of another dtype are not kept") {
    cache.store(ids({11}), tokens.narrow(0, 1, 1), rows.narrow(0, 0, 1).to(torch::kDouble));
    CHECK_FALSE(cache.fetch(ids({11}), tokens.narrow(0, 1, 1), &hidden).any().item<bool>());
  }
}

TEST_CASE("an unopenable prefix cache names its file", "[autocache]") {
  CHECK_THROWS_WITH(FilePrefixCache("/nonexistent/dir/rows", 1, {2}, torch::kFloat, {}),
                    Catch::Contains("/nonexistent/dir/rows"));
}

namespace {

// The cache as the chunk sees it, in memory, counting the rows it is handed.
class MemoryCache : public PrefixCache {
 public:
  MemoryCache(int64_t layers, std::vector<int64_t> row) : layers_(layers), row_(std::move(row)) {}
  int64_t layers() const override { return layers_; }
  torch::Tensor fetch(const torch::Tensor& samples, const torch::Tensor& /*inputs*/,
                      torch::Tensor* hidden) override {
    std::vector<int64_t> shape{samples.size(0)};
    shape.insert(shape.end(), row_.begin(), row_.end());
    *hidden = torch::zeros(shape);
    torch::Tensor hit = torch::zeros({samples.size(0)}, torch::kBool);
    for (int64_t i = 0; i < samples.size(0); ++i) {
      const auto it = rows_.find(samples[i].item<int64_t>());
      if (it == rows_.end()) continue;
      (*hidden)[i].copy_(it->second);
      hit[i] = true;
    }
    return hit;
  }
  void store(const torch::Tensor& samples, const torch::Tensor& /*inputs*/,
             const torch::Tensor& hidden) override {
    for (int64_t i = 0; i < samples.size(0); ++i) {
      rows_[samples[i].item<int64_t>()] = hidden[i].detach().clone();
      ++stored;
    }
  }
  int64_t stored = 0;

 private:
  int64_t layers_;
  std::vector<int64_t> row_;
  std::map<int64_t, torch::Tensor> rows_;
};

}  // namespace

TEST_CASE("a chunk runs its frozen prefix only for the rows the cache misses", "[autocache]") {
  Config c = testing::tiny_gpt_config(1, 1, "1f1b", 1);
  const ModelSpec& spec = model_spec(c.model.arch);
  std::shared_ptr<Communicator> self = MpiCommunicator::self();
  auto chunk = spec.build_chunk(c, 0, spec.stage_layers(c), *self);
  chunk->module().eval();
  torch::NoGradGuard no_grad;
  Batch batch = testing::tiny_gpt_batch(0, c).slice(0, 4);
  batch.samples = ids({10, 11, 12, 13});
  const torch::Tensor reference = chunk->forward(torch::Tensor(), batch);

  MemoryCache cache(2, {c.model.seq_len, c.model.hidden});
  REQUIRE(chunk->set_prefix_cache(&cache));
  // Every row missed: the prefix runs over the whole batch, and its rows are kept.
  CHECK(torch::equal(chunk->forward(torch::Tensor(), batch), reference));
  CHECK(cache.stored == 4);
  // Two rows known (samples 10 and 12), two not: only those two run the prefix.
  Batch mixed = batch;
  mixed.samples = ids({10, 20, 12, 21});
  CHECK(torch::allclose(chunk->forward(torch::Tensor(), mixed), reference, 0, 1e-6));
  CHECK(cache.stored == 6);
  // Every row known: the same bits as running the prefix.
  CHECK(torch::equal(chunk->forward(torch::Tensor(), batch), reference));
  CHECK(cache.stored == 6);
  // Batches without sample indices (evaluation) never touch the cache.
  Batch plain = batch;
  plain.samples = torch::Tensor();
  CHECK(torch::equal(chunk->forward(torch::Tensor(), plain), reference));
  CHECK(cache.stored == 6);
}

TEST_CASE("AutoCache opens only when a later epoch reads its rows", "[autocache]") {
  Config c = testing::tiny_gpt_config(1, 1, "1f1b", 1);
  c.train.frozen_layers = 2;
  c.run.dir = "/tmp/unused-run-dir";
  RunPlan plan = plan_run(c, 1, DataCheck::kSkip);
  plan.data.steps_per_epoch = 10;
  plan.data.total_steps = 30;
  CHECK(prefix_cache_wanted(plan, 0));
  CHECK(prefix_cache_wanted(plan, 19));        // step 20 is in the second epoch; a third follows
  CHECK_FALSE(prefix_cache_wanted(plan, 20));  // steps 21..30: the last epoch
  plan.data.total_steps = 10;                  // one epoch: nothing is read again
  CHECK_FALSE(prefix_cache_wanted(plan, 0));
  plan.data.total_steps = 30;
  plan.config.freeze.cache = false;
  CHECK_FALSE(prefix_cache_wanted(plan, 0));
  plan.config.freeze.cache = true;
  plan.config.train.frozen_layers = 0;
  CHECK_FALSE(prefix_cache_wanted(plan, 0));
  plan.config.train.frozen_layers = 2;
  plan.config.run.dir = "";
  CHECK_FALSE(prefix_cache_wanted(plan, 0));
}

TEST_CASE("ranks computing the same rows agree on their misses", "[mpi][autocache]") {
  std::shared_ptr<Communicator> world = MpiCommunicator::world();
  if (world->size() < 2) return;
  // Each rank its own file (as tensor-parallel ranks have); only rank 0 holds sample 4's row, so
  // every rank must report it missing (and run the frozen layers for it), and sample 3 found.
  char name[] = "/tmp/triax_prefix_agree_XXXXXX";
  const std::string dir = world->rank() == 0 ? std::string(::mkdtemp(name)) : std::string();
  std::vector<std::string> dirs = all_gather_text(*world, dir);
  const std::string file = str(dirs[0], "/rows-", world->rank());
  world->barrier();
  {
    FilePrefixCache cache(file, 1, {2}, torch::kFloat, {world.get()});
    const torch::Tensor tokens = torch::arange(6, torch::kLong).reshape({2, 3});
    cache.store(ids({3}), tokens.narrow(0, 0, 1), torch::ones({1, 2}));
    if (world->rank() == 0) cache.store(ids({4}), tokens.narrow(0, 1, 1), torch::ones({1, 2}));
    torch::Tensor hidden;
    const torch::Tensor hit = cache.fetch(ids({3, 4}), tokens, &hidden);
    CHECK(hit[0].item<bool>());
    CHECK_FALSE(hit[1].item<bool>());
  }
  world->barrier();
  if (world->rank() == 0) std::filesystem::remove_all(dirs[0]);
}
