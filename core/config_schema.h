// defines: triax::ConfigVisitor, triax::IntRule, triax::RealRule, triax::visit_config
//
// The configuration's schema is written once, as a walk over the Config struct
// (visit_config), and read by several visitors: the YAML reader (validation and unknown keys),
// the YAML writer (resolved config), and the key documentation. Adding a field is one line in
// config_schema.cpp plus the struct member.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/config.h"

namespace triax {

/// Inclusive bounds for an integer field.
struct IntRule {
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
};

/// Bounds for a real field; `min_exclusive` makes the lower bound strict (lr > 0).
struct RealRule {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_exclusive = false;
};

class ConfigVisitor {
 public:
  virtual ~ConfigVisitor() = default;
  virtual void section(const std::string& key, const std::function<void()>& body) = 0;
  virtual void field(const std::string& key, int64_t& value, IntRule rule, const char* doc) = 0;
  virtual void field(const std::string& key, double& value, RealRule rule, const char* doc) = 0;
  virtual void field(const std::string& key, bool& value, const char* doc) = 0;
  /// `choices` empty means any string.
  virtual void field(const std::string& key, std::string& value,
                     const std::vector<std::string>& choices, const char* doc) = 0;
  virtual void field(const std::string& key, std::vector<int64_t>& value, IntRule element_rule,
                     const char* doc) = 0;
  /// A list of closed choices (`choices` the valid spellings of each element).
  virtual void field(const std::string& key, std::vector<std::string>& value,
                     const std::vector<std::string>& choices, const char* doc) = 0;
};

/// A closed choice: visited as its YAML spelling (so readers validate and writers print it like
/// any string field), kept as the enum. An invalid spelling is reported by the reader and leaves
/// the value as it was.
template <typename E>
void choice_field(ConfigVisitor& v, const std::string& key, E& value, const char* doc) {
  std::string text = choice_name(value);
  v.field(key, text, choice_names<E>(), doc);
  parse_choice(text, &value);
}

/// Walks every section and field of `config` in file order.
void visit_config(Config& config, ConfigVisitor& visitor);

}  // namespace triax
