// triax's Llama at tp = 1 against an independent PyTorch implementation written from the published
// formulas (llama_reference.py, run by Debian's python3-torch): grouped-query, multi-query and
// multi-head attention, tied and untied heads, q/k/v biases, RoPE with and without Llama 3.1
// scaling (the frequencies themselves are compared with the formula too).
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>

#include "core/safetensors.h"
#include "core/strings.h"
#include "models/llama.h"
#include "parallel/comm/mpi_communicator.h"

using namespace triax;

namespace {

struct Case {
  int64_t kv_heads;
  bool tied, qkv_bias;
  double rope_scaling_factor;
};

}  // namespace

TEST_CASE("the Llama matches PyTorch: loss and every gradient", "[python][llama]") {
  const char* source = std::getenv("TRIAX_SOURCE_DIR");
  if (source == nullptr || std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    WARN("SKIPPED: needs TRIAX_SOURCE_DIR and /usr/bin/python3 with torch (python3-torch)");
    return;
  }
  auto single = MpiCommunicator::self();
  for (const Case& c :
       {Case{2, false, false, 8.0}, Case{1, true, true, 0.0}, Case{4, false, true, 32.0}}) {
    LlamaOptions options;
    options.vocab = 61;
    options.hidden = 48;
    options.heads = 4;
    options.kv_heads = c.kv_heads;
    options.intermediate = 40;
    options.layers = 2;
    options.seq_len = 12;
    options.norm_eps = 1e-5;
    options.rope_theta = 500.0;  // small: the 12 positions turn every frequency visibly
    options.rope_scaling_factor = c.rope_scaling_factor;
    options.rope_original_max_positions = 16;  // wavelengths on both sides of the cut-offs
    options.tie_embeddings = c.tied;
    options.qkv_bias = c.qkv_bias;
    options.seed = 7;
    Llama model(options, *single);
    SafetensorsFile file;
    for (const auto& item : model->named_parameters()) {
      file.tensors.emplace_back(item.key(), item.value().detach().clone());
    }
    torch::manual_seed(3);
    const torch::Tensor tokens =
        torch::randint(0, options.vocab, {3, options.seq_len + 1}, torch::kLong);
    const torch::Tensor ids = tokens.narrow(1, 0, options.seq_len).contiguous();
    const torch::Tensor targets = tokens.narrow(1, 1, options.seq_len).contiguous();
    const torch::Tensor loss = model->loss(ids, targets);
    loss.backward();
    file.tensors.emplace_back("batch.ids", ids);
    file.tensors.emplace_back("batch.targets", targets);
    file.tensors.emplace_back("result.loss", loss.detach().reshape({1}));
    file.tensors.emplace_back("rope.inv_freq",
                              rope_inverse_frequencies(options, options.hidden / options.heads));
    for (const auto& item : model->named_parameters()) {
      file.tensors.emplace_back("grad." + item.key(), item.value().grad());
    }
    file.metadata = {{"vocab", str(options.vocab)},
                     {"hidden", str(options.hidden)},
                     {"heads", str(options.heads)},
                     {"kv_heads", str(options.kv_heads)},
                     {"layers", str(options.layers)},
                     {"norm_eps", str(options.norm_eps)},
                     {"rope_theta", str(options.rope_theta)},
                     {"rope_scaling_factor", str(options.rope_scaling_factor)},
                     {"rope_low_freq_factor", str(options.rope_low_freq_factor)},
                     {"rope_high_freq_factor", str(options.rope_high_freq_factor)},
                     {"rope_original_max_positions", str(options.rope_original_max_positions)}};
    const std::string path = (std::filesystem::temp_directory_path() /
                              str("triax_llama_", ::getpid(), "_", c.kv_heads, ".safetensors"))
                                 .string();
    save_safetensors(path, file);
    const int code = std::system(
        str("/usr/bin/python3 ", source, "/tests/models/llama_reference.py ", path).c_str());
    std::filesystem::remove(path);
    INFO("kv_heads=" << c.kv_heads << " tied=" << c.tied << " qkv_bias=" << c.qkv_bias
                     << " rope scaling " << c.rope_scaling_factor);
    CHECK(code == 0);
  }
}

TEST_CASE("the Llama's SwiGLU width follows Llama's multiple-of rule", "[llama]") {
  CHECK(llama_intermediate_size(4096, 256) == 11008);  // Llama 2 7B
  CHECK(llama_intermediate_size(128, 32) == 352);
}
