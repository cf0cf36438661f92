// defines: triax::str, triax::join, triax::split, triax::edit_distance, triax::closest,
//          triax::fixed
//
// Small string helpers used by every message the project prints. `closest` powers the
// "did you mean" hints of the configuration and the command line.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

namespace triax {

/// Concatenates anything streamable: str("tp=", 2) == "tp=2".
template <typename... Parts>
std::string str(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

/// join({1,2,3}, ", ") == "1, 2, 3".
template <typename Container>
std::string join(const Container& items, const std::string& sep) {
  std::ostringstream out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out << sep;
    out << item;
    first = false;
  }
  return out.str();
}

/// split("a.b.c", '.') == {"a", "b", "c"}; empty parts are kept.
std::vector<std::string> split(const std::string& text, char sep);

/// Levenshtein distance between two strings.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// `value` with `digits` decimals ("12.35"): the figures of tables and reports.
std::string fixed(double value, int digits);

/// The candidate closest to `word`, or "" when none is close enough to be a plausible typo.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace triax
