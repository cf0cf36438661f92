#include "models/hf_family.h"

#include "core/error.h"
#include "core/strings.h"

namespace triax {

int64_t HfConfigKeys::integer(const std::string& key) const {
  if (!has(key) || !j_[key].is_number_integer()) refuse(key, "must be an integer");
  return j_[key].get<int64_t>();
}

int64_t HfConfigKeys::integer_or(const std::string& key, int64_t fallback) const {
  return has(key) ? integer(key) : fallback;
}

double HfConfigKeys::number_or(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  if (!j_[key].is_number()) refuse(key, "must be a number");
  return j_[key].get<double>();
}

bool HfConfigKeys::boolean_or(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!j_[key].is_boolean()) refuse(key, "must be true or false");
  return j_[key].get<bool>();
}

std::string HfConfigKeys::text_or(const std::string& key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  if (!j_[key].is_string()) refuse(key, "must be a string");
  return j_[key].get<std::string>();
}

void HfConfigKeys::refuse(const std::string& key, const std::string& rule) const {
  throw ConfigError(str(path_, ": ", key, ": ",
                        j_.contains(key) ? j_[key].dump() : std::string("(absent)"), ": ", rule));
}

}  // namespace triax
