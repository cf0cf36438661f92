// triax's GPT at tp = 1 against an independent PyTorch implementation (gpt_reference.py run by
// Debian's python3-torch): triax writes its initial weights, a batch, its loss and gradients to a
// safetensors file; the script rebuilds the model in PyTorch from those weights and compares.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>

#include "core/safetensors.h"
#include "core/strings.h"
#include "models/gpt.h"
#include "parallel/comm/mpi_communicator.h"

using namespace triax;

TEST_CASE("the GPT matches PyTorch: loss and every gradient", "[python][gpt]") {
  const char* source = std::getenv("TRIAX_SOURCE_DIR");
  if (source == nullptr || std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    WARN("SKIPPED: needs TRIAX_SOURCE_DIR and /usr/bin/python3 with torch (python3-torch)");
    return;
  }
  auto single = MpiCommunicator::self();
  // Untied with GPT-2's tanh GELU (model.activation: gelu_tanh), tied with the exact one.
  for (bool tied : {true, false}) {
    GptOptions options;
    options.mlp = tied ? MlpKind::kGelu : MlpKind::kGeluTanh;
    options.vocab = 61;
    options.hidden = 48;
    options.heads = 4;
    options.layers = 2;
    options.seq_len = 12;
    options.tie_embeddings = tied;
    options.seed = 7;
    Gpt model(options, *single);
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
    for (const auto& item : model->named_parameters()) {
      file.tensors.emplace_back("grad." + item.key(), item.value().grad());
    }
    file.metadata = {{"vocab", str(options.vocab)},
                     {"hidden", str(options.hidden)},
                     {"heads", str(options.heads)},
                     {"layers", str(options.layers)},
                     {"seq_len", str(options.seq_len)},
                     {"tie_embeddings", tied ? "true" : "false"},
                     {"activation", tied ? "gelu" : "gelu_tanh"}};
    const std::string path = (std::filesystem::temp_directory_path() /
                              str("triax_gpt_", ::getpid(), "_", tied, ".safetensors"))
                                 .string();
    save_safetensors(path, file);
    const int code = std::system(
        str("/usr/bin/python3 ", source, "/tests/models/gpt_reference.py ", path).c_str());
    std::filesystem::remove(path);
    INFO("tie_embeddings=" << tied);
    CHECK(code == 0);
  }
}

TEST_CASE("safetensors round trip", "[gpt]") {
  SafetensorsFile file;
  file.tensors = {{"a", torch::arange(6, torch::kFloat).view({2, 3})},
                  {"b", torch::tensor({1, 2, 3}, torch::kLong)},
                  {"empty", torch::zeros({0, 4})}};
  file.metadata = {{"note", "quote \" and backslash \\"}};
  const std::string path =
      (std::filesystem::temp_directory_path() / "triax_roundtrip.safetensors").string();
  save_safetensors(path, file);
  const SafetensorsFile back = load_safetensors(path);
  std::filesystem::remove(path);
  REQUIRE(back.tensors.size() == 3);
  CHECK(torch::equal(back.at("a"), file.tensors[0].second));
  CHECK(torch::equal(back.at("b"), file.tensors[1].second));
  CHECK(back.at("empty").sizes() == torch::IntArrayRef({0, 4}));
  CHECK(back.metadata.at("note") == "quote \" and backslash \\");
  CHECK_THROWS_WITH(back.at("aa"), Catch::Contains("did you mean 'a'?"));
}
