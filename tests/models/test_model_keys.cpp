// Every model.* key of the schema is either in the family's ModelKeys (what its build read), and
// then a resume with it changed is refused naming the key and both values, or it changes no
// weight and no evaluation output of that family's model. A new key that shapes a model or its
// numbers without being read through ModelKeys fails here, whoever adds it.
#include <catch2/catch.hpp>

#include <set>

#include "checkpoint/resume.h"
#include "core/config_schema.h"
#include "core/error.h"
#include "models/gpt_spec.h"
#include "models/model_spec.h"
#include "parallel/comm/mpi_communicator.h"
#include "support/tiny_gpt.h"
#include "support/tiny_llama.h"

using namespace triax;

namespace {

// Visits every field; `change(key)` gives the field `key` another value of its type (doubled,
// flipped, the next choice), `keys` lists the model.* keys.
class FieldWalk : public ConfigVisitor {
 public:
  explicit FieldWalk(std::string target = "") : target_(std::move(target)) {}
  std::vector<std::string> keys;

  void section(const std::string& key, const std::function<void()>& body) override {
    const std::string outer = prefix_;
    prefix_ = prefix_.empty() ? key : prefix_ + "." + key;
    body();
    prefix_ = outer;
  }
  void field(const std::string& key, int64_t& value, IntRule, const char*) override {
    if (hit(key)) value = value > 0 ? value * 2 : 2;
  }
  void field(const std::string& key, double& value, RealRule, const char*) override {
    if (hit(key)) value = value != 0 ? value * 2 : 0.5;
  }
  void field(const std::string& key, bool& value, const char*) override {
    if (hit(key)) value = !value;
  }
  void field(const std::string& key, std::string& value, const std::vector<std::string>& choices,
             const char*) override {
    if (!hit(key)) return;
    REQUIRE(choices.size() > 1);  // a free string in model: would need a value here
    const auto at = std::find(choices.begin(), choices.end(), value);
    value = choices[(static_cast<size_t>(at - choices.begin()) + 1) % choices.size()];
  }
  void field(const std::string& key, std::vector<int64_t>& value, IntRule, const char*) override {
    if (hit(key)) {
      for (int64_t& v : value) v *= 2;
    }
  }
  void field(const std::string& key, std::vector<std::string>&, const std::vector<std::string>&,
             const char*) override {
    hit(key);
  }

 private:
  bool hit(const std::string& key) {
    const std::string full = prefix_ + "." + key;
    if (full.rfind("model.", 0) == 0) keys.push_back(full);
    return full == target_;
  }
  std::string prefix_;
  std::string target_;
};

std::vector<std::string> model_schema_keys() {
  Config c;
  FieldWalk walk;
  visit_config(c, walk);
  return walk.keys;
}

Config changed(const Config& base, const std::string& key) {
  Config c = base;
  FieldWalk walk(key);
  visit_config(c, walk);
  return c;
}

struct Built {
  std::vector<std::pair<std::string, torch::Tensor>> parameters;
  torch::Tensor output;
};

// The whole model (one stage) in evaluation mode, and its output on a fixed batch.
Built build(const Config& config, Communicator& self) {
  const ModelSpec& spec = model_spec(config.model.arch);
  auto chunk = spec.build_chunk(config, 0, spec.stage_layers(config), self);
  chunk->module().eval();
  Built b;
  for (const auto& p : chunk->module().named_parameters()) {
    b.parameters.emplace_back(p.key(), p.value().detach().clone());
  }
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  const Batch batch = spec.generates_text
                          ? random_token_batch(config, 3)
                          : Batch{torch::randn({4, 784}), torch::randint(0, 10, {4})};
  b.output = chunk->forward(torch::Tensor(), batch);
  return b;
}

void walk_family(const Config& base) {
  std::shared_ptr<Communicator> self = MpiCommunicator::self();
  const ModelSpec& spec = model_spec(base.model.arch);
  const ModelKeys before = spec.model_keys(base.model);
  std::map<std::string, std::string> listed(before.entries().begin(), before.entries().end());
  const Built reference = build(base, *self);
  for (const std::string& key : model_schema_keys()) {
    if (key == "model.arch") continue;
    INFO(spec.name << ": " << key);
    const Config other = changed(base, key);
    if (listed.count(key) > 0) {
      const ModelKeys after = spec.model_keys(other.model);
      std::map<std::string, std::string> now(after.entries().begin(), after.entries().end());
      REQUIRE(now.count(key) > 0);
      CHECK(now[key] != listed[key]);
      CHECK_THROWS_WITH(check_same_model(base, other, "ckpt"),
                        Catch::Contains(key + " was " + listed[key] + ", now " + now[key]) &&
                            Catch::Contains("holds another model"));
      continue;
    }
    CHECK_NOTHROW(check_same_model(base, other, "ckpt"));
    const Built b = build(other, *self);
    REQUIRE(b.parameters.size() == reference.parameters.size());
    for (size_t i = 0; i < b.parameters.size(); ++i) {
      CHECK(b.parameters[i].first == reference.parameters[i].first);
      CHECK(torch::equal(b.parameters[i].second, reference.parameters[i].second));
    }
    CHECK(torch::equal(b.output, reference.output));
  }
}

}  // namespace

TEST_CASE("every model.* key is in the family's ModelKeys or changes nothing it computes",
          "[model_keys]") {
  SECTION("GPT") {
    walk_family(testing::tiny_gpt_config(1, 1, "1f1b", 1));
  }
  SECTION("Llama (GQA, explicit SwiGLU width, scaled RoPE)") {
    walk_family(testing::tiny_llama_config(1, 1, "1f1b", 1));
  }
  SECTION("Llama (the multiple-of rule, unscaled RoPE, q/k/v bias)") {
    Config c = testing::tiny_llama_config(1, 1, "1f1b", 1);
    c.model.intermediate_size = 0;
    c.model.multiple_of = 8;
    c.model.rope_scaling_factor = 0;
    c.model.qkv_bias = true;
    walk_family(c);
  }
  SECTION("MLP") {
    Config c;
    c.model.arch = ModelKind::kMlp;
    c.model.mlp_hidden = {8};
    walk_family(c);
  }
}

TEST_CASE("a resume into the same model is allowed, into another family refused", "[model_keys]") {
  const Config gpt = testing::tiny_gpt_config(1, 1, "1f1b", 1);
  Config same = gpt;
  same.model.kv_heads = 0;   // not read by the GPT
  same.model.dropout = 0.1;  // a training choice
  same.train.lr = 1;
  CHECK_NOTHROW(check_same_model(gpt, same, "ckpt"));
  const Config llama = testing::tiny_llama_config(1, 1, "1f1b", 1);
  CHECK_THROWS_WITH(check_same_model(gpt, llama, "ckpt"),
                    Catch::Contains("model.arch was gpt, now llama"));
  // kv_heads 0 means heads: the same model as kv_heads = heads.
  Config mha = llama, spelled = llama;
  mha.model.kv_heads = 0;
  spelled.model.kv_heads = llama.model.heads;
  CHECK_NOTHROW(check_same_model(mha, spelled, "ckpt"));
}
