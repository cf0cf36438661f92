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

void read_sizes(const HfConfigKeys& keys, const std::vector<HfSizeKey>& sizes, ModelConfig& m) {
  for (const HfSizeKey& size : sizes) m.*size.field = keys.integer(size.key);
}

void write_sizes(const std::vector<HfSizeKey>& sizes, const ModelConfig& m, nlohmann::json& j) {
  for (const HfSizeKey& size : sizes) j[size.key] = m.*size.field;
}

void append_layer_tensors(std::vector<HfTensor>& out, int64_t layers,
                          const std::string& layer_prefix, const std::vector<HfTensor>& per_layer) {
  for (int64_t i = 0; i < layers; ++i) {
    for (const HfTensor& t : per_layer) {
      out.push_back({str(layer_prefix, i, ".", t.hf), str("layer", i, ".", t.triax), t.hf_shape,
                     t.transposed});
    }
  }
}

}  // namespace triax
