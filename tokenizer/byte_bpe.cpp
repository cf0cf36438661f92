#include "tokenizer/byte_bpe.h"

#include <climits>

#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// The cache of one thread: piece -> ids, for the tokenizer that filled it (text repeats its
// words; every piece's merges would otherwise be redone).
struct PieceCache {
  const void* owner = nullptr;
  std::unordered_map<std::string, std::vector<int32_t>> ids;
};

PieceCache& cache_for(const void* owner) {
  thread_local PieceCache cache;
  if (cache.owner != owner || cache.ids.size() > 200000) {
    cache.ids.clear();
    cache.owner = owner;
  }
  return cache;
}

}  // namespace

ByteBpe::ByteBpe(BpeModel model) : model_(std::move(model)), pretokenizer_(model_.pattern) {
  for (size_t id = 0; id < model_.tokens.size(); ++id) {
    const std::string& t = model_.tokens[id];
    if (t.empty()) continue;
    bool special = false;
    for (const auto& [text, sid] : model_.specials)
      special = special || sid == static_cast<int32_t>(id);
    if (special) continue;
    if (!ids_.emplace(t, static_cast<int32_t>(id)).second) {
      throw Error(
          str(model_.source, ": two ids for the same bytes (", ids_.at(t), " and ", id, ")"));
    }
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = ids_.find(std::string(1, static_cast<char>(b)));
    if (it == ids_.end()) throw Error(str(model_.source, ": byte ", b, " has no token"));
    byte_ids_[b] = it->second;
  }
  if (model_.rank_by_token) {
    // tiktoken: the pair (a, b) ranks as the token a+b; every split of every token is a pair.
    for (const auto& [bytes, id] : ids_) {
      for (size_t k = 1; k < bytes.size(); ++k) {
        const auto left = ids_.find(bytes.substr(0, k));
        const auto right = ids_.find(bytes.substr(k));
        if (left != ids_.end() && right != ids_.end()) {
          merges_[pair_key(left->second, right->second)] = {id, id};
        }
      }
    }
  } else {
    for (size_t rank = 0; rank < model_.merges.size(); ++rank) {
      const auto& [a, b] = model_.merges[rank];
      const auto left = ids_.find(a), right = ids_.find(b), merged = ids_.find(a + b);
      if (left == ids_.end() || right == ids_.end() || merged == ids_.end()) {
        throw Error(str(model_.source, ": merge ", rank, " names a token the vocabulary lacks"));
      }
      merges_.emplace(pair_key(left->second, right->second),
                      std::make_pair(static_cast<int32_t>(rank), merged->second));
    }
  }
  for (const auto& [text, id] : model_.specials) {
    if (text.empty()) continue;
    if (special_starts_.find(text[0]) == std::string::npos) special_starts_ += text[0];
  }
}

std::string ByteBpe::describe() const {
  return str("byte-level BPE (", model_.source, ", ", vocab_size(), " tokens, ",
             model_.specials.size(), " special)");
}

void ByteBpe::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (model_.whole_pieces) {
    const auto whole = ids_.find(std::string(piece));
    if (whole != ids_.end()) {
      out.push_back(whole->second);
      return;
    }
  }
  std::vector<int32_t> parts;
  parts.reserve(piece.size());
  for (unsigned char c : piece) parts.push_back(byte_ids_[c]);
  while (parts.size() > 1) {
    int32_t best_rank = INT_MAX, best_id = -1;
    size_t best = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const auto it = merges_.find(pair_key(parts[i], parts[i + 1]));
      if (it != merges_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best_id = it->second.second;
        best = i;
      }
    }
    if (best_id < 0) break;
    parts[best] = best_id;
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  out.insert(out.end(), parts.begin(), parts.end());
}

void ByteBpe::encode_ordinary(std::string_view text, std::vector<int32_t>& out) const {
  PieceCache& cache = cache_for(this);
  for (std::string_view piece : pretokenizer_.split(text)) {
    std::string key(piece);
    const auto hit = cache.ids.find(key);
    if (hit != cache.ids.end()) {
      out.insert(out.end(), hit->second.begin(), hit->second.end());
      continue;
    }
    std::vector<int32_t> ids;
    encode_piece(piece, ids);
    out.insert(out.end(), ids.begin(), ids.end());
    if (piece.size() <= 64) cache.ids.emplace(std::move(key), std::move(ids));
  }
}

std::vector<int32_t> ByteBpe::encode(const std::string& text, bool allow_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 1);
  if (!allow_special || model_.specials.empty()) {
    encode_ordinary(text, out);
    return out;
  }
  size_t done = 0;
  for (size_t at = text.find_first_of(special_starts_); at != std::string::npos;
       at = text.find_first_of(special_starts_, at + 1)) {
    // The longest special token starting here.
    const std::pair<const std::string, int32_t>* found = nullptr;
    for (const auto& item : model_.specials) {
      if (text.compare(at, item.first.size(), item.first) == 0 &&
          (found == nullptr || item.first.size() > found->first.size())) {
        found = &item;
      }
    }
    if (found == nullptr) continue;
    encode_ordinary(std::string_view(text).substr(done, at - done), out);
    out.push_back(found->second);
    done = at + found->first.size();
    at = done - 1;
  }
  encode_ordinary(std::string_view(text).substr(done), out);
  return out;
}

std::string ByteBpe::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw Error(str("decode: id ", id, " outside the vocabulary [0, ", vocab_size(), ")"));
    }
    text += model_.tokens[static_cast<size_t>(id)];
  }
  return text;
}

}  // namespace triax
