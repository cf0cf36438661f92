// Hugging Face folders in and out, checked against tests/interop/hf_reference.py (written from
// the safetensors format and transformers' published model formulas, not from triax's code):
// random-weight folders in the exact layouts transformers writes are imported; triax's logits
// must equal the reference's computed from the folder itself (what catches a transposed Conv1D,
// a q/k/v split in the wrong order, a swapped norm); single-file and sharded imports agree
// exactly, and so do imports at tp 1 x pp 1 and tp 2 x pp 2; import -> export reproduces every
// tensor (name, shape, dtype, bytes); what would load but compute something else is refused.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "checkpoint/checkpoint.h"
#include "checkpoint/convert.h"
#include "checkpoint/location.h"
#include "checkpoint/resume.h"
#include "core/error.h"
#include "core/safetensors.h"
#include "core/strings.h"
#include "interop/hf_config.h"
#include "interop/hf_export.h"
#include "interop/hf_import.h"
#include "models/model_spec.h"
#include "parallel/comm/mpi_communicator.h"

using namespace triax;
namespace fs = std::filesystem;

namespace {

const char* source_dir() {
  return std::getenv("TRIAX_SOURCE_DIR");
}

bool have_reference() {
  return source_dir() != nullptr &&
         std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") == 0;
}

int reference(const std::string& args) {
  return std::system(
      str("/usr/bin/python3 ", source_dir(), "/tests/interop/hf_reference.py ", args).c_str());
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / str("triax_hf_", ::getpid(), "_", counter()++);
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

FullModelState full_state(const std::string& out_root) {
  const std::string dir = out_root + "/" + step_folder(0);
  return read_full_state(open_checkpoint(dir, dir));
}

// The whole model at tp 1 x pp 1 with `state`'s weights: next-token logits of `ids`.
torch::Tensor logits_of(const FullModelState& state, const torch::Tensor& ids) {
  auto single = MpiCommunicator::self();
  const std::unique_ptr<ModelChunk> model = whole_model(state, *single);
  torch::NoGradGuard no_grad;
  const Batch batch{ids, ids};
  return model->logits(model->forward(torch::Tensor(), batch));
}

void check_logits(const std::string& folder, const FullModelState& state, const TempDir& tmp) {
  torch::manual_seed(5);
  const torch::Tensor ids =
      torch::randint(0, state.config.model.vocab,
                     {2, std::min<int64_t>(12, state.config.model.seq_len)}, torch::kLong);
  SafetensorsFile file;
  file.tensors = {{"ids", ids}, {"logits", logits_of(state, ids)}};
  save_safetensors(tmp / "logits.safetensors", file);
  CHECK(reference(str("logits ", folder, " ", tmp / "logits.safetensors")) == 0);
}

bool equal_states(const FullModelState& a, const FullModelState& b) {
  if (a.tensors.size() != b.tensors.size()) return false;
  for (const auto& [name, t] : a.tensors) {
    const auto it = b.tensors.find(name);
    if (it == b.tensors.end() || !it->second.equal(t)) return false;
  }
  return true;
}

Config base_config() {
  Config base;
  base.model.seq_len = 16;
  base.train.global_batch = 8;
  base.train.micro_batch = 2;
  return base;
}

}  // namespace

TEST_CASE("Hugging Face folders import to what transformers computes, both ways", "[python][hf]") {
  if (!have_reference()) {
    WARN("SKIPPED: needs TRIAX_SOURCE_DIR and /usr/bin/python3 with torch (python3-torch)");
    return;
  }
  struct Case {
    std::string arch, options;
    bool round_trip;  ///< the folder is in the layout export writes (prefix, no buffers)
    const char* dtype;
  };
  for (const Case& c :
       {Case{"gpt2", "", true, "fp32"},
        Case{"gpt2", "--no-prefix --buffers --dtype BF16", false, "bf16"},
        Case{"llama", "", true, "fp32"},
        Case{"llama", "--tied --buffers --dtype F16", false, "fp32"},
        Case{"qwen2", "--dtype BF16", true, "bf16"}, Case{"mistral", "--tied", true, "fp32"}}) {
    INFO(c.arch << " " << c.options);
    TempDir tmp;
    const std::string single = tmp / "single", sharded = tmp / "sharded";
    REQUIRE(reference(str("make ", single, " ", c.arch, " ", c.options)) == 0);
    REQUIRE(reference(str("make ", sharded, " ", c.arch, " ", c.options, " --shards 3")) == 0);
    const HfImport one = import_hf(single, base_config(), 1, 1, 1, tmp / "ck_single");
    import_hf(sharded, base_config(), 2, 2, 1, tmp / "ck_sharded");
    const FullModelState a = full_state(tmp / "ck_single");
    const FullModelState b = full_state(tmp / "ck_sharded");
    CHECK(equal_states(a, b));  // one file = three shards; tp 1 x pp 1 = tp 2 x pp 2
    check_logits(single, a, tmp);
    CHECK(fs::exists(one.config_path));
    const Config again = load_config(one.config_path);
    CHECK(again.model.vocab == a.config.model.vocab);
    if (c.round_trip) {
      export_hf(b, tmp / "exported", c.dtype, 0);
      CHECK(reference(str("same ", single, " ", tmp / "exported")) == 0);
      const HfExport split = export_hf(b, tmp / "exported3", c.dtype, 20000);
      CHECK(split.files > 1);
      CHECK(reference(str("same ", sharded, " ", tmp / "exported3")) == 0);
    }
  }
}

TEST_CASE("what would load but compute something else is refused, naming the tensor or key",
          "[python][hf]") {
  if (!have_reference()) {
    WARN("SKIPPED: needs TRIAX_SOURCE_DIR and /usr/bin/python3 with torch (python3-torch)");
    return;
  }
  TempDir tmp;
  const std::string dir = tmp / "llama";
  REQUIRE(reference(str("make ", dir, " llama")) == 0);
  const auto edit_config = [&](const std::string& from, const std::string& to) {
    std::ifstream in(dir + "/config.json");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    std::ofstream(dir + "/config.json") << text;
  };
  edit_config("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"");
  CHECK_THROWS_WITH(import_hf(dir, base_config(), 1, 1, 1, tmp / "out"),
                    Catch::Contains("hidden_act: \"gelu\"") && Catch::Contains("valid: silu"));
  edit_config("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"silu\"");
  edit_config("\"intermediate_size\": 40", "\"intermediate_size\": 48");
  CHECK_THROWS_WITH(import_hf(dir, base_config(), 1, 1, 1, tmp / "out"),
                    Catch::Contains("model.layers.0.mlp.gate_proj.weight has shape [40, 32]") &&
                        Catch::Contains("implies [48, 32]"));
  edit_config("\"intermediate_size\": 48", "\"intermediate_size\": 40");
  edit_config("\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true");
  CHECK_THROWS_WITH(import_hf(dir, base_config(), 1, 1, 1, tmp / "out"),
                    Catch::Contains("lm_head.weight differs from model.embed_tokens.weight"));
  edit_config("\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
  edit_config("\"rope_type\": \"llama3\"", "\"rope_type\": \"yarn\"");
  CHECK_THROWS_WITH(
      import_hf(dir, base_config(), 1, 1, 1, tmp / "out"),
      Catch::Contains("rope type 'yarn'") && Catch::Contains("valid: default, llama3"));
  edit_config("\"rope_type\": \"yarn\"", "\"rope_type\": \"llama3\"");
  CHECK_THROWS_WITH(import_hf(dir, base_config(), 4, 1, 1, tmp / "out"),
                    Catch::Contains("kv_heads"));  // tp 4 does not divide 2 kv heads
  Config long_seq = base_config();
  long_seq.model.seq_len = 128;
  CHECK_THROWS_WITH(import_hf(dir, long_seq, 1, 1, 1, tmp / "out"),
                    Catch::Contains("max_position_embeddings 64"));
  // An extra tensor triax would silently drop.
  TempDir other;
  REQUIRE(reference(str("make ", other / "gpt", " gpt2 --buffers")) == 0);
  CHECK_NOTHROW(import_hf(other / "gpt", base_config(), 1, 1, 1, other / "ok"));
  REQUIRE(reference(str("make ", other / "qwen", " qwen2")) == 0);
  edit_config("\"architectures\": [\n    \"LlamaForCausalLM\"",
              "\"architectures\": [\n    \"Qwen2ForCausalLM\"");
  CHECK_THROWS_WITH(import_hf(dir, base_config(), 1, 1, 1, tmp / "out"),
                    Catch::Contains("q_proj.bias is missing"));
  fs::copy_file(other / "qwen/model.safetensors", dir + "/model.safetensors",
                fs::copy_options::overwrite_existing);
  edit_config("\"architectures\": [\n    \"Qwen2ForCausalLM\"",
              "\"architectures\": [\n    \"LlamaForCausalLM\"");
  CHECK_THROWS_WITH(
      import_hf(dir, base_config(), 1, 1, 1, tmp / "out"),
      Catch::Contains("tensor(s) triax does not know") && Catch::Contains("q_proj.bias"));
}

TEST_CASE("a config.json triax cannot read is refused naming the file and the key", "[hf]") {
  TempDir dir;
  const std::string path = dir / "config.json";
  const auto refusal = [&](const std::string& text, int64_t seq_len = 16) {
    std::ofstream(path) << text;
    ModelConfig base;
    base.seq_len = seq_len;
    try {
      read_hf_config(dir.path.string(), base);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const std::string llama =
      R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 32, "hidden_size": 16,
          "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
          "max_position_embeddings": 18)";
  CHECK(refusal(llama + "}") == "(accepted)");
  // Values of the wrong JSON type (read past the key helpers: nlohmann's own type_error).
  CHECK_THAT(refusal(R"({"architectures": [1]})"),
             Catch::StartsWith(path) && Catch::Contains("architectures"));
  CHECK_THAT(refusal(llama + R"(, "rope_scaling": {"rope_type": 3}})"),
             Catch::StartsWith(path) && Catch::Contains("rope_scaling"));
  CHECK_THAT(refusal(llama + R"(, "rope_scaling": {"rope_theta": "x"}})"),
             Catch::StartsWith(path) && Catch::Contains("rope_scaling"));
  // A model longer than the checkpoint's positions.
  CHECK_THAT(refusal(llama + "}", 64), Catch::Contains("model.seq_len: 64") &&
                                           Catch::Contains("max_position_embeddings 18") &&
                                           Catch::Contains(path));
}
