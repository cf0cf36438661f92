// The tokenizers against independent references: GPT-2's real files (fetched by
// tools/fetch_gpt2_vocab.py, sha256-checked) give the known ids and equal openai/gpt-2's
// encoder.py algorithm (tests/tokenizer/bpe_reference.py, python3-regex) on thousands of random
// Unicode/whitespace/digit/contraction strings; the same files as a tiktoken rank file give the
// same ids; the Llama 3 and Qwen2 pre-tokenizers cut like python3-regex; a SentencePiece model
// trained here encodes like spm_encode; decode(encode(x)) = x for any bytes.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "tokenizer/bpe_files.h"
#include "tokenizer/byte_bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/tokenizer.h"

using namespace triax;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string gpt2_dir() {
  const char* dir = std::getenv("TRIAX_GPT2_DIR");
  return dir != nullptr && fs::exists(fs::path(dir) / "vocab.bpe") ? dir : "";
}

bool have_python_regex() {
  return std::system("/usr/bin/python3 -c 'import regex' 2>/dev/null") == 0 &&
         std::getenv("TRIAX_SOURCE_DIR") != nullptr;
}

int reference(const std::string& args) {
  return std::system(str("/usr/bin/python3 ", std::getenv("TRIAX_SOURCE_DIR"),
                         "/tests/tokenizer/bpe_reference.py ", args)
                         .c_str());
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / str("triax_tok_", ::getpid());
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::vector<std::string> random_strings(const TempDir& tmp, int n) {
  REQUIRE(reference(str("random ", n, " 7 ", tmp / "strings.json")) == 0);
  std::ifstream in(tmp / "strings.json");
  return json::parse(in).get<std::vector<std::string>>();
}

void write_json(const std::string& path, const json& value) {
  std::ofstream(path) << value.dump();
}

// A toy byte-level BPE: every byte, then "ab", "abc", "cd" by merges.
BpeModel toy_model() {
  BpeModel m;
  for (int b = 0; b < 256; ++b) m.tokens.push_back(std::string(1, static_cast<char>(b)));
  m.tokens.push_back("ab");   // 256
  m.tokens.push_back("abc");  // 257
  m.tokens.push_back("cd");   // 258
  m.merges = {{"a", "b"}, {"ab", "c"}, {"c", "d"}};
  m.tokens.push_back("<|end|>");  // 259
  m.specials["<|end|>"] = 259;
  m.eos = 259;
  m.pattern = pretokenizer_pattern("gpt2");
  m.source = "toy";
  return m;
}

}  // namespace

TEST_CASE("byte-level BPE merges by rank, splits specials, and round-trips any bytes",
          "[tokenizer]") {
  const ByteBpe bpe(toy_model());
  CHECK(bpe.encode("abcd") == std::vector<int32_t>{257, 'd'});  // ab, then abc outranks cd
  CHECK(bpe.encode("cdab") == std::vector<int32_t>{258, 256});
  CHECK(bpe.encode("x<|end|>y", true) == std::vector<int32_t>{'x', 259, 'y'});
  CHECK(bpe.encode("x<|end|>y", false).size() == 9);  // ordinary text when not allowed
  const std::string invalid = std::string("ok \xff\xfe caf\xc3\xa9 \xe2\x82", 12);
  CHECK(bpe.decode(bpe.encode(invalid)) == invalid);
  const Pretokenizer gpt2(pretokenizer_pattern("gpt2"));
  std::string joined;
  for (auto piece : gpt2.split(invalid)) joined += piece;
  CHECK(joined == invalid);
  CHECK_THROWS_WITH(pretokenizer_pattern("bert"), Catch::Contains("valid: gpt2, llama3, qwen2"));
  CHECK_THROWS_WITH(load_tokenizer("/nonexistent/tok"), Catch::Contains("valid: bytes"));
  // Ranking by token (tiktoken) gives the same ids when ranks follow the merges' order.
  BpeModel by_token = toy_model();
  by_token.merges.clear();
  by_token.rank_by_token = true;
  const ByteBpe tiktoken_style(by_token);
  CHECK(tiktoken_style.encode("abcd") == bpe.encode("abcd"));
}

TEST_CASE("GPT-2's tokenizer gives the known ids and equals encoder.py on random strings",
          "[python][tokenizer]") {
  if (gpt2_dir().empty() || !have_python_regex()) {
    WARN("SKIPPED: needs TRIAX_GPT2_DIR (tools/fetch_gpt2_vocab.py) and python3-regex");
    return;
  }
  const auto gpt2 = load_tokenizer(gpt2_dir() + "/encoder.json");
  CHECK(gpt2->vocab_size() == 50257);
  CHECK(gpt2->eos_id() == 50256);
  CHECK(gpt2->encode("Hello world") == std::vector<int32_t>{15496, 995});
  CHECK(gpt2->encode("The meaning of life is") == std::vector<int32_t>{464, 3616, 286, 1204, 318});
  CHECK(gpt2->encode("<|endoftext|>", true) == std::vector<int32_t>{50256});
  TempDir tmp;
  const std::vector<std::string> strings = random_strings(tmp, 3000);
  json ids = json::array();
  for (const std::string& s : strings) {
    const std::vector<int32_t> got = gpt2->encode(s);
    ids.push_back(got);
    CHECK(gpt2->decode(got) == s);
  }
  write_json(tmp / "ids.json", ids);
  CHECK(reference(str("gpt2 ", gpt2_dir(), " ", tmp / "strings.json ", tmp / "ids.json")) == 0);

  // The same vocabulary as a tiktoken rank file (GPT-2's pattern): the same ids.
  REQUIRE(reference(str("to-tiktoken ", gpt2_dir(), " ", tmp / "gpt2.tiktoken")) == 0);
  TokenizerOptions options;
  options.tiktoken_pattern = "gpt2";
  const auto ranks = load_tokenizer(tmp / "gpt2.tiktoken", options);
  json rank_ids = json::array();
  bool same = true;
  for (size_t k = 0; k < strings.size(); ++k) {
    const std::vector<int32_t> got = ranks->encode(strings[k]);
    same = same && got == ids[k].get<std::vector<int32_t>>();
    rank_ids.push_back(got);
  }
  CHECK(same);
  write_json(tmp / "rank_ids.json", rank_ids);
  CHECK(reference(str("tiktoken ", tmp / "gpt2.tiktoken", " gpt2 ", tmp / "strings.json ",
                      tmp / "rank_ids.json")) == 0);

  // The same vocabulary as a Hugging Face tokenizer.json: GPT-2's layout gives GPT-2's ids.
  REQUIRE(reference(str("to-tokenizer-json ", gpt2_dir(), " ", tmp / "tokenizer.json")) == 0);
  const auto hf = load_tokenizer(tmp / "tokenizer.json");
  bool same_hf = true;
  for (size_t k = 0; k < strings.size(); ++k) {
    same_hf = same_hf && hf->encode(strings[k]) == ids[k].get<std::vector<int32_t>>();
  }
  CHECK(same_hf);
  CHECK(hf->encode("<|endoftext|>", true) == std::vector<int32_t>{50256});
  CHECK(hf->eos_id() == 50256);

  // Llama 3's and Qwen2's layouts (Split regex, ignore_merges; rank files with their patterns)
  // against the reference's tiktoken encoder with the same pattern.
  for (const char* family : {"llama3", "qwen2"}) {
    INFO(family);
    REQUIRE(reference(str("to-tokenizer-json ", gpt2_dir(), " ", tmp / "split.json ", family)) ==
            0);
    const auto split_json = load_tokenizer(tmp / "split.json");
    TokenizerOptions pattern;
    pattern.tiktoken_pattern = family;
    const auto rank_file = load_tokenizer(tmp / "gpt2.tiktoken", pattern);
    json family_ids = json::array();
    bool agree = true;
    for (const std::string& s : strings) {
      const std::vector<int32_t> got = rank_file->encode(s);
      agree = agree && split_json->encode(s) == got;
      family_ids.push_back(got);
    }
    CHECK(agree);  // tokenizer.json and tiktoken readers agree
    write_json(tmp / "family_ids.json", family_ids);
    CHECK(reference(str("tiktoken ", tmp / "gpt2.tiktoken", " ", family, " ", tmp / "strings.json ",
                        tmp / "family_ids.json")) == 0);
  }
}

TEST_CASE("the GPT-2, Llama 3 and Qwen2 pre-tokenizers cut like python3-regex",
          "[python][tokenizer]") {
  if (!have_python_regex()) {
    WARN("SKIPPED: needs python3-regex (apt-get install python3-regex)");
    return;
  }
  TempDir tmp;
  const std::vector<std::string> strings = random_strings(tmp, 3000);
  for (const char* family : {"gpt2", "llama3", "qwen2"}) {
    const Pretokenizer pre(pretokenizer_pattern(family));
    json splits = json::array();
    for (const std::string& s : strings) {
      json pieces = json::array();
      for (auto piece : pre.split(s)) pieces.push_back(std::string(piece));
      splits.push_back(pieces);
    }
    write_json(tmp / "splits.json", splits);
    CHECK(reference(str("splits ", family, " ", tmp / "strings.json ", tmp / "splits.json")) == 0);
  }
}

TEST_CASE("a SentencePiece model trained here encodes like spm_encode", "[python][tokenizer]") {
  if (std::system("command -v spm_encode >/dev/null 2>&1") != 0 ||
      !fs::exists("/usr/share/games/fortunes/fortunes")) {
    WARN("SKIPPED: needs spm_encode (apt-get install sentencepiece) and fortunes");
    return;
  }
  TempDir tmp;
  SentencePieceTraining training;
  training.inputs = {"/usr/share/games/fortunes/fortunes"};
  training.out_prefix = tmp / "spm";
  training.vocab_size = 500;
  const std::string model_path = train_sentencepiece(training);
  const auto spm = load_tokenizer(model_path);
  CHECK(spm->vocab_size() == 500);
  CHECK(spm->bos_id() == 1);
  CHECK(spm->eos_id() == 2);
  const std::vector<std::string> lines = {"Hello world, the 2024 fortunes!", "  two  spaces",
                                          "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x9a\x80",
                                          "A man, a plan, a canal: Panama."};
  {
    std::ofstream out(tmp / "lines.txt");
    for (const auto& l : lines) out << l << "\n";
  }
  REQUIRE(std::system(str("spm_encode --model=", model_path, " --output_format=id < ",
                          tmp / "lines.txt", " > ", tmp / "ids.txt")
                          .c_str()) == 0);
  std::ifstream in(tmp / "ids.txt");
  for (const std::string& l : lines) {
    std::string row;
    std::getline(in, row);
    std::vector<int32_t> want;
    for (const std::string& id : split(row, ' ')) {
      if (!id.empty()) want.push_back(std::stoi(id));
    }
    INFO(l);
    CHECK(spm->encode(l) == want);
    CHECK(spm->decode(spm->encode(l)) == l);
  }
}
