#include "models/model_keys.h"

#include <charconv>
#include <map>

#include "core/strings.h"

namespace triax {

std::string ModelKeys::spell(int64_t value) {
  return std::to_string(value);
}

std::string ModelKeys::spell(double value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

std::string ModelKeys::spell(bool value) {
  return value ? "true" : "false";
}

std::string ModelKeys::spell(const std::vector<int64_t>& value) {
  return str("[", join(value, ", "), "]");
}

std::vector<std::string> ModelKeys::differences(const ModelKeys& was, const ModelKeys& now) {
  std::map<std::string, std::string> after(now.entries_.begin(), now.entries_.end());
  std::vector<std::string> out;
  for (const auto& [key, value] : was.entries_) {
    const auto it = after.find(key);
    const std::string then = it == after.end() ? "(not read)" : it->second;
    if (then != value) out.push_back(str(key, " was ", value, ", now ", then));
    if (it != after.end()) after.erase(it);
  }
  for (const auto& [key, value] : now.entries_) {
    if (after.count(key) > 0) out.push_back(str(key, " was (not read), now ", value));
  }
  return out;
}

}  // namespace triax
