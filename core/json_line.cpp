#include "core/json_line.h"

#include <cmath>
#include <cstdio>

namespace triax {
namespace {

std::string number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

void JsonLine::key(const std::string& name) {
  if (!body_.empty()) body_ += ", ";
  body_ += quoted(name) + ": ";
}

JsonLine& JsonLine::add(const std::string& name, double value) {
  key(name);
  body_ += number(value);
  return *this;
}

JsonLine& JsonLine::add(const std::string& name, int64_t value) {
  key(name);
  body_ += std::to_string(value);
  return *this;
}

JsonLine& JsonLine::add(const std::string& name, const std::string& value) {
  key(name);
  body_ += quoted(value);
  return *this;
}

JsonLine& JsonLine::add(const std::string& name, const std::vector<double>& values) {
  key(name);
  body_ += "[";
  for (size_t i = 0; i < values.size(); ++i) body_ += (i ? ", " : "") + number(values[i]);
  body_ += "]";
  return *this;
}

}  // namespace triax
