#include "tokenizer/bpe_files.h"

#include <array>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

using nlohmann::json;

// bytes_to_unicode's inverse: code point -> byte (-1: not in the alphabet).
const std::array<int, 324>& alphabet() {
  static const std::array<int, 324> table = [] {
    std::array<int, 324> t;
    t.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      t[static_cast<size_t>(printable ? b : 256 + extra++)] = b;
    }
    return t;
  }();
  return table;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(str(path, ": cannot read"));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

json read_json(const std::string& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw ConfigError(str(path, ": not JSON: ", e.what()));
  }
}

std::pair<std::string, std::string> split_merge(const std::string& line, const std::string& where) {
  const size_t space = line.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 >= line.size()) {
    throw ConfigError(str(where, ": '", line, "' is not a merge (valid: two tokens and a space)"));
  }
  return {byte_alphabet_to_bytes(line.substr(0, space), where),
          byte_alphabet_to_bytes(line.substr(space + 1), where)};
}

void set_token(BpeModel& model, int64_t id, std::string bytes, const std::string& where) {
  if (id < 0 || id > (1 << 24)) throw ConfigError(str(where, ": id ", id, " out of range"));
  if (model.tokens.size() <= static_cast<size_t>(id))
    model.tokens.resize(static_cast<size_t>(id) + 1);
  model.tokens[static_cast<size_t>(id)] = std::move(bytes);
}

std::string base64_decode(const std::string& text, const std::string& where) {
  static const std::string digits =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const size_t v = digits.find(c);
    if (v == std::string::npos) throw ConfigError(str(where, ": '", text, "' is not base64"));
    buffer = (buffer << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return out;
}

// Runs a reader; an error that is not already ours (a JSON value of the wrong type, a number
// that does not parse) becomes a ConfigError naming the file, like every other refusal.
template <class Read>
BpeModel reading(const std::string& path, const char* what, Read read) {
  try {
    return read();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw ConfigError(str(path, ": not a valid ", what, " (", e.what(), ")"));
  }
}

// A token id from JSON: an integer in [0, 2^31) (nlohmann's get<int> of a float out of range
// is undefined behaviour, and a negative id would index out of the table).
int32_t json_id(const json& value, const std::string& where) {
  const bool in_range =
      (value.is_number_unsigned() && value.get<uint64_t>() <= INT32_MAX) ||
      (value.is_number_integer() && value.get<int64_t>() >= 0 && value.get<int64_t>() <= INT32_MAX);
  if (!in_range) {
    throw ConfigError(str(where, ": token id ", value.dump(), " is not an integer in [0, 2^31)"));
  }
  return static_cast<int32_t>(value.get<int64_t>());
}

int64_t parse_rank(const std::string& text, const std::string& where) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    throw ConfigError(str(where, ": rank '", text, "' is not a non-negative integer"));
  }
  return value;
}

}  // namespace

std::string byte_alphabet_to_bytes(const std::string& text, const std::string& where) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    uint32_t cp = 0;
    int len = 1;
    if (c < 0x80) {
      cp = c;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < text.size()) {
      cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
      len = 2;
    } else {
      throw ConfigError(str(where, ": '", text, "' is outside the byte-level BPE alphabet"));
    }
    const int b = cp < alphabet().size() ? alphabet()[cp] : -1;
    if (b < 0) throw ConfigError(str(where, ": '", text, "' is outside the byte-level alphabet"));
    out += static_cast<char>(b);
    i += static_cast<size_t>(len);
  }
  return out;
}

BpeModel read_gpt2_bpe(const std::string& vocab_json, const std::string& merges_txt) {
  return reading(vocab_json, "GPT-2 encoder.json + vocab.bpe pair", [&] {
    BpeModel model;
    model.source = vocab_json;
    model.pattern = pretokenizer_pattern("gpt2");
    const json vocab = read_json(vocab_json);
    for (const auto& [token, id] : vocab.items()) {
      if (token == "<|endoftext|>") {
        model.specials[token] = json_id(id, vocab_json);
        set_token(model, json_id(id, vocab_json), token, vocab_json);
        model.eos = json_id(id, vocab_json);  // documents end with it; nothing marks their start
        continue;
      }
      set_token(model, json_id(id, vocab_json), byte_alphabet_to_bytes(token, vocab_json),
                vocab_json);
    }
    std::istringstream lines(read_file(merges_txt));
    std::string line;
    int64_t number = 0;
    while (std::getline(lines, line)) {
      ++number;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line.rfind("#version", 0) == 0) continue;
      model.merges.push_back(split_merge(line, str(merges_txt, ":", number)));
    }
    return model;
  });
}

BpeModel read_tokenizer_json(const std::string& path, const std::string& tokenizer_config) {
  return reading(path, "tokenizer.json", [&] {
    const json j = read_json(path);
    const json& m = j.at("model");
    if (m.value("type", std::string()) != "BPE") {
      throw ConfigError(str(path, ": model.type ", m.value("type", std::string("?")),
                            " (valid: BPE; a SentencePiece model is read from tokenizer.model)"));
    }
    const std::string pre = j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null()
                                ? j["pre_tokenizer"].dump()
                                : std::string();
    const std::string dec =
        j.contains("decoder") && !j["decoder"].is_null() ? j["decoder"].dump() : std::string();
    if (pre.find("ByteLevel") == std::string::npos && dec.find("ByteLevel") == std::string::npos) {
      throw ConfigError(str(path, ": not a byte-level BPE (no ByteLevel pre-tokenizer or decoder; ",
                            "Llama 2 / Mistral style BPE: use their tokenizer.model)"));
    }
    BpeModel model;
    model.source = path;
    model.whole_pieces = m.value("ignore_merges", false);
    model.pattern = pretokenizer_pattern("gpt2");
    // A Split pre-tokenizer carries the family's regex (Llama 3, Qwen2).
    const std::function<void(const json&)> find_split = [&](const json& node) {
      if (node.is_object()) {
        if (node.value("type", std::string()) == "Split" && node.contains("pattern") &&
            node["pattern"].contains("Regex")) {
          model.pattern = node["pattern"]["Regex"].get<std::string>();
        }
        for (const auto& item : node) find_split(item);
      } else if (node.is_array()) {
        for (const auto& item : node) find_split(item);
      }
    };
    if (j.contains("pre_tokenizer")) find_split(j["pre_tokenizer"]);
    for (const auto& [token, id] : m.at("vocab").items()) {
      set_token(model, json_id(id, path), byte_alphabet_to_bytes(token, path), path);
    }
    for (const auto& merge : m.at("merges")) {
      if (merge.is_string()) {
        model.merges.push_back(split_merge(merge.get<std::string>(), path));
      } else {
        model.merges.emplace_back(byte_alphabet_to_bytes(merge.at(0).get<std::string>(), path),
                                  byte_alphabet_to_bytes(merge.at(1).get<std::string>(), path));
      }
    }
    if (j.contains("added_tokens")) {
      for (const auto& added : j["added_tokens"]) {
        const std::string content = added.at("content").get<std::string>();
        const int32_t id = json_id(added.at("id"), path);
        set_token(model, id, content, path);
        model.specials[content] = id;
      }
    }
    const auto id_of = [&](const json& token) -> int32_t {
      const std::string text =
          token.is_object() ? token.value("content", std::string()) : token.get<std::string>();
      const auto it = model.specials.find(text);
      return it == model.specials.end() ? -1 : it->second;
    };
    if (!tokenizer_config.empty()) {
      const json c = read_json(tokenizer_config);
      if (c.contains("bos_token") && !c["bos_token"].is_null()) model.bos = id_of(c["bos_token"]);
      if (c.contains("eos_token") && !c["eos_token"].is_null()) model.eos = id_of(c["eos_token"]);
    } else {
      for (const auto& [text, id] : model.specials) {
        if (text == "<|endoftext|>") model.eos = id;
        if (text == "<|begin_of_text|>" || text == "<s>") model.bos = id;
        if (text == "<|end_of_text|>" || text == "</s>") model.eos = id;
      }
    }
    return model;
  });
}

bool looks_like_tiktoken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t space = line.find(' ');
  if (space == std::string::npos || space == 0 || space + 1 >= line.size()) return false;
  for (size_t i = space + 1; i < line.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(line[i]))) return false;
  }
  return line.find_first_not_of(
             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == space;
}

BpeModel read_tiktoken(const std::string& path, const std::string& pattern_family) {
  return reading(path, "tiktoken rank file", [&] {
    BpeModel model;
    model.source = path;
    model.rank_by_token = true;
    model.whole_pieces = true;
    model.pattern = pretokenizer_pattern(pattern_family);
    std::istringstream lines(read_file(path));
    std::string line;
    int64_t number = 0, ranks = 0;
    while (std::getline(lines, line)) {
      ++number;
      if (line.empty()) continue;
      const size_t space = line.find(' ');
      const std::string where = str(path, ":", number);
      if (space == std::string::npos) throw ConfigError(str(where, ": expected 'base64 rank'"));
      set_token(model, parse_rank(line.substr(space + 1), where),
                base64_decode(line.substr(0, space), where), where);
      ++ranks;
    }
    if (ranks == 128000) {
      // Llama 3(.1)'s special tokens (meta-llama/llama3 llama/tokenizer.py), ids 128000..128255.
      std::vector<std::string> names = {"<|begin_of_text|>",
                                        "<|end_of_text|>",
                                        "<|reserved_special_token_0|>",
                                        "<|reserved_special_token_1|>",
                                        "<|finetune_right_pad_id|>",
                                        "<|step_id|>",
                                        "<|start_header_id|>",
                                        "<|end_header_id|>",
                                        "<|eom_id|>",
                                        "<|eot_id|>",
                                        "<|python_tag|>"};
      for (int i = 2; names.size() < 256; ++i)
        names.push_back(str("<|reserved_special_token_", i, "|>"));
      for (size_t k = 0; k < names.size(); ++k) {
        const int32_t id = static_cast<int32_t>(ranks + static_cast<int64_t>(k));
        set_token(model, id, names[k], path);
        model.specials[names[k]] = id;
      }
      model.bos = 128000;
      model.eos = 128001;
    }
    return model;
  });
}

}  // namespace triax
