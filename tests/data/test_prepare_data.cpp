// prepare-data: text in, token files out, binaries and links skipped, the held-out split spread
// over the corpus, and every byte kept exactly once.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/prepare_data.h"
#include "data/token_file.h"
#include "tokenizer/byte_bpe.h"
#include "tokenizer/tokenizer.h"

using Catch::Contains;
using namespace triax;
namespace fs = std::filesystem;

TEST_CASE("prepare-data splits text into train and held-out token files", "[prepare_data]") {
  const fs::path dir = fs::temp_directory_path() / "triax-test-prepare";
  fs::remove_all(dir);
  fs::create_directories(dir / "in");
  std::string text;
  for (int i = 0; i < 4000; ++i) text += "line " + std::to_string(i) + " of the corpus\n";
  std::ofstream(dir / "in" / "a.txt") << text.substr(0, 40000);
  std::ofstream(dir / "in" / "b.txt") << text.substr(40000);
  std::ofstream(dir / "in" / "index.dat") << std::string("\0\1\2", 3);
  fs::create_symlink(dir / "in" / "a.txt", dir / "in" / "a.u8");

  const auto bytes = load_tokenizer("bytes");
  const PreparedData data =
      prepare_text_data({(dir / "in").string()}, (dir / "out").string(), 0.1, *bytes);
  CHECK(data.files == 2);
  REQUIRE(data.skipped.size() == 2);
  CHECK_THAT(data.skipped[0] + data.skipped[1],
             Contains("symbolic link") && Contains("index.dat (binary"));
  CHECK(data.train_tokens + data.val_tokens == static_cast<int64_t>(text.size()));
  const double held_out = static_cast<double>(data.val_tokens) / static_cast<double>(text.size());
  CHECK(held_out > 0.07);
  CHECK(held_out < 0.13);

  // Every byte is in one of the two files, in order within each.
  const TokenFile train((dir / "out" / "train.tok").string());
  const TokenFile val((dir / "out" / "val.tok").string());
  CHECK(train.vocab() == 256);
  const auto as_text = [](const torch::Tensor& tokens) {
    const torch::Tensor bytes = tokens.to(torch::kByte);
    return std::string(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()),
                       static_cast<size_t>(bytes.numel()));
  };
  CHECK(as_text(train.read(0, 20)) == text.substr(0, 20));
  const std::string val_text = as_text(val.read(0, val.size()));
  CHECK(val_text.back() == '\n');                         // blocks end at line ends
  CHECK(text.find(val_text.substr(0, 100)) > 4096u * 5);  // not from the start of the corpus

  CHECK_THROWS_WITH(
      prepare_text_data({(dir / "nothing").string()}, (dir / "o").string(), 0.1, *bytes),
      Contains("no such file or folder"));
}

TEST_CASE("with a tokenizer each document is [bos] text [eos], the same on any thread count",
          "[prepare_data]") {
  const fs::path dir = fs::temp_directory_path() / "triax_prepare_tokenizer";
  fs::remove_all(dir);
  fs::create_directories(dir / "in");
  std::string a, b;
  for (int i = 0; i < 3000; ++i) a += "alpha line " + std::to_string(i) + "\n";
  for (int i = 0; i < 500; ++i) b += "beta " + std::to_string(i) + "\n";
  std::ofstream(dir / "in" / "a.txt") << a;
  std::ofstream(dir / "in" / "b.txt") << b;
  BpeModel model;  // bytes, plus a merge, plus begin/end tokens
  for (int c = 0; c < 256; ++c) model.tokens.push_back(std::string(1, static_cast<char>(c)));
  model.tokens.push_back("al");
  model.merges = {{"a", "l"}};
  model.tokens.push_back("<s>");
  model.tokens.push_back("</s>");
  model.specials = {{"<s>", 257}, {"</s>", 258}};
  model.bos = 257;
  model.eos = 258;
  model.pattern = pretokenizer_pattern("gpt2");
  model.source = "toy";
  const ByteBpe tokenizer(model);
  const PreparedData one =
      prepare_text_data({(dir / "in").string()}, (dir / "one").string(), 0.1, tokenizer, 1);
  const PreparedData three =
      prepare_text_data({(dir / "in").string()}, (dir / "three").string(), 0.1, tokenizer, 3);
  CHECK(one.vocab == 259);
  CHECK(one.train_tokens == three.train_tokens);
  const TokenFile t1((dir / "one" / "train.tok").string());
  const TokenFile v1((dir / "one" / "val.tok").string());
  const TokenFile t3((dir / "three" / "train.tok").string());
  CHECK(t1.vocab() == 259);
  CHECK(torch::equal(t1.read(0, t1.size()), t3.read(0, t3.size())));
  // Two documents: two bos, two eos, wherever the split put them; the text decodes back.
  const torch::Tensor all = torch::cat({t1.read(0, t1.size()), v1.read(0, v1.size())});
  CHECK(all.eq(257).sum().item<int64_t>() == 2);
  CHECK(all.eq(258).sum().item<int64_t>() == 2);
  CHECK(t1.read(0, 1).item<int64_t>() == 257);
  CHECK(all.eq(256).sum().item<int64_t>() > 1000);  // "al" merged
  fs::remove_all(dir);
}
