// defines: triax::ModelKeys
//
// What a family's model is, key by key: the model.* keys its build read, with the values it read
// (the GPT's and Llama's from_config, the MLP's widths read nothing else). They are the keys that
// shape the weights or change what they compute (a rotary base, a norm epsilon, the activation),
// so a checkpoint resumes only into the same list (checkpoint/resume.h names each difference).
// The list is what the build read, not a second list beside it: a new key read through read()
// joins it by itself, and tests/models/test_model_keys.cpp changes every model.* key of the
// schema to prove each one is either listed or changes no weight and no output.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config_choices.h"

namespace triax {

class ModelKeys {
 public:
  /// Records `key` = `value` (as the YAML would spell it) and returns the value.
  template <typename T>
  const T& read(const char* key, const T& value) {
    entries_.emplace_back(key, spell(value));
    return value;
  }

  /// (key, value) in the order the build read them.
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

  /// "model.kv_heads was 4, now 2" for each key whose value differs, or that only one of the two
  /// builds read ("(not read)": e.g. model.multiple_of once model.intermediate_size is set).
  static std::vector<std::string> differences(const ModelKeys& was, const ModelKeys& now);

 private:
  static std::string spell(int64_t value);
  static std::string spell(double value);  ///< shortest text that reads back as the same double
  static std::string spell(bool value);
  static std::string spell(const std::vector<int64_t>& value);
  template <typename E>
  static std::string spell(const E& value) {
    return choice_name(value);
  }

  std::vector<std::pair<std::string, std::string>> entries_;
};

}  // namespace triax
