// defines: triax::JsonLine
//
// One JSON object on one line, for JSONL metrics files (metrics.jsonl: one record per step), so
// any tool (pandas.read_json(lines=True), jq, the plot script) reads them without a parser of
// ours. Non-finite numbers are written as null, which JSON has and NaN is not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace triax {

class JsonLine {
 public:
  JsonLine& add(const std::string& key, double value);
  JsonLine& add(const std::string& key, int64_t value);
  JsonLine& add(const std::string& key, const std::string& value);
  JsonLine& add(const std::string& key, const std::vector<double>& values);
  /// "{...}" without a newline.
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void key(const std::string& name);
  std::string body_;
};

}  // namespace triax
