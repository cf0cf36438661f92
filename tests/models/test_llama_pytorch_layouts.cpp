// triax's Llama trained in several layouts against the independent PyTorch Llama
// (llama_reference.py) trained by torch.optim.AdamW: under mpiexec -n 4, the tiny Llama
// (support/tiny_llama.h) trains 50 steps at (tp, pp) in {1,2}^2, with and without sequence
// parallelism, from the same initial weights on the same global batches. Each rank writes what
// it holds (its shards of the gradients after step 1 and of the parameters after step 50, with
// their shard specs); rank 0 writes the initial weights, the batches and each layout's losses
// and gradient norms; llama_layouts_reference.py reassembles the shards and compares them with
// PyTorch's own training (tolerances stated there).
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>

#include "core/safetensors.h"
#include "core/strings.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/tp/shard_spec.h"
#include "support/test_world.h"
#include "support/tiny_llama.h"
#include "train/trainer.h"

using namespace triax;

namespace {

constexpr int kSteps = 50;

struct Layout {
  int tp, pp;
  bool sequence;
  const char* schedule;
  int chunks;
};

std::string layout_name(const Layout& l) {
  return str("tp", l.tp, "_pp", l.pp, l.sequence ? "_sp" : "", "_", l.schedule);
}

Config layout_config(const Layout& l) {
  Config c = testing::tiny_llama_config(l.tp, l.pp, l.schedule, l.chunks);
  c.parallel.sequence = l.sequence;
  c.train.weight_decay = 0.1;  // matrices only: the reference must apply the same rule
  c.train.lr = 1e-3;           // smooth training: at 3e-3 the norm spikes 20x by step 40
  return c;
}

/// One process's initial weights (every layout starts from them), both batches and the
/// hyper-parameters the reference needs.
void write_initial(const std::string& path) {
  const Config c = layout_config({1, 1, false, "1f1b", 1});
  std::shared_ptr<Communicator> single = MpiCommunicator::self();
  ParallelContext context(single, ParallelLayout::create(1, 1, 1));
  Trainer trainer(testing::plan_for(c, context), context);
  SafetensorsFile file;
  for (const auto& item : trainer.chunks().front()->module().named_parameters()) {
    file.tensors.emplace_back(item.key(), item.value().detach().clone());
  }
  for (int b = 0; b < 2; ++b) {
    const Batch batch = testing::tiny_gpt_batch(b, c);
    file.tensors.emplace_back(str("batch", b, ".inputs"), batch.inputs);
    file.tensors.emplace_back(str("batch", b, ".targets"), batch.targets);
  }
  const ModelConfig& m = c.model;
  file.metadata = {{"vocab", str(m.vocab)},
                   {"hidden", str(m.hidden)},
                   {"heads", str(m.heads)},
                   {"kv_heads", str(m.kv_heads)},
                   {"layers", str(m.layers)},
                   {"norm_eps", str(m.norm_eps)},
                   {"rope_theta", str(m.rope_theta)},
                   {"rope_scaling_factor", str(m.rope_scaling_factor)},
                   {"rope_low_freq_factor", str(m.rope_low_freq_factor)},
                   {"rope_high_freq_factor", str(m.rope_high_freq_factor)},
                   {"rope_original_max_positions", str(m.rope_original_max_positions)},
                   {"lr", str(c.train.lr)},
                   {"beta1", str(c.train.beta1)},
                   {"beta2", str(c.train.beta2)},
                   {"eps", str(c.train.eps)},
                   {"weight_decay", str(c.train.weight_decay)},
                   {"clip_grad", str(c.train.clip_grad)},
                   {"steps", str(kSteps)}};
  save_safetensors(path, file);
}

/// Trains `layout` and writes this rank's shards (dp rank 0 only: other dp ranks hold copies).
void train_layout(const Layout& layout, const std::string& dir,
                  const std::shared_ptr<Communicator>& world) {
  const Config c = layout_config(layout);
  ParallelContext context(world, ParallelLayout::from_config(c.parallel, world->size()));
  Trainer trainer(testing::plan_for(c, context), context);
  SafetensorsFile mine;
  std::vector<double> losses, norms;
  for (int step = 0; step < kSteps; ++step) {
    losses.push_back(trainer.step(testing::tiny_gpt_batch(step, c)));
    norms.push_back(trainer.last_grad_norm());
    if (step > 0) continue;
    // After step 1 the gradients are still there: summed over dp, tp and pp, and clipped.
    for (auto& chunk : trainer.chunks()) {
      for (const auto& item : chunk->module().named_parameters()) {
        mine.tensors.emplace_back("grad." + item.key(), item.value().grad().clone());
      }
    }
  }
  for (auto& chunk : trainer.chunks()) {
    for (const auto& [name, traits] : collect_param_traits(chunk->module())) {
      if (!traits.sharded) continue;
      mine.metadata["spec." + name] =
          str(traits.spec.dim, ",", traits.spec.stride, ",", traits.spec.full_size);
    }
    for (const auto& item : chunk->module().named_parameters()) {
      mine.tensors.emplace_back("final." + item.key(), item.value().detach().clone());
    }
  }
  mine.metadata["tp_rank"] = str(context.tp_rank());
  mine.metadata["dp"] = str(context.dp_size());
  if (context.rank() == 0) {
    mine.tensors.emplace_back("losses", torch::tensor(losses, torch::kDouble));
    mine.tensors.emplace_back("norms", torch::tensor(norms, torch::kDouble));
  }
  if (context.dp_rank() == 0) {
    save_safetensors(str(dir, "/", layout_name(layout), ".rank", context.rank(), ".safetensors"),
                     mine);
  }
  world->barrier_async()->wait();
}

}  // namespace

TEST_CASE("the Llama trains like PyTorch's in every (tp, pp) layout, with and without SP",
          "[mpi][python][llama_layouts]") {
  const char* source = std::getenv("TRIAX_SOURCE_DIR");
  std::shared_ptr<Communicator> world = testing::test_world();
  REQUIRE(world->size() == 4);
  if (source == nullptr || std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    WARN("SKIPPED: needs TRIAX_SOURCE_DIR and /usr/bin/python3 with torch (python3-torch)");
    return;
  }
  // One directory for all ranks: rank 0's process id names it.
  torch::Tensor id = torch::tensor({static_cast<int64_t>(::getpid())}, torch::kLong);
  world->broadcast(id, 0);
  const std::string dir =
      (std::filesystem::temp_directory_path() / str("triax_llama_layouts_", id.item<int64_t>()))
          .string();
  if (world->rank() == 0) {
    std::filesystem::create_directories(dir);
    write_initial(dir + "/initial.safetensors");
  }
  world->barrier_async()->wait();
  for (const Layout& layout :
       {Layout{1, 1, false, "1f1b", 1}, Layout{2, 1, false, "1f1b", 1},
        Layout{2, 1, true, "1f1b", 1}, Layout{1, 2, false, "1f1b", 1},
        Layout{2, 2, false, "gpipe", 1}, Layout{2, 2, true, "interleaved", 2}}) {
    train_layout(layout, dir, world);
  }
  torch::Tensor code = torch::zeros({1}, torch::kLong);
  if (world->rank() == 0) {
    code[0] = std::system(
        str("/usr/bin/python3 ", source, "/tests/models/llama_layouts_reference.py ", dir).c_str());
    if (std::getenv("TRIAX_KEEP") == nullptr) std::filesystem::remove_all(dir);
  }
  world->broadcast(code, 0);
  CHECK(code.item<int64_t>() == 0);
}
