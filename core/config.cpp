#include "core/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/config_schema.h"
#include "core/error.h"

namespace triax {
namespace {

std::string show(const YAML::Node& node) {
  if (node.IsScalar()) return str("'", node.Scalar(), "'");
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

std::string describe_int_rule(IntRule rule) {
  const bool has_min = rule.min != std::numeric_limits<int64_t>::min();
  const bool has_max = rule.max != std::numeric_limits<int64_t>::max();
  if (has_min && has_max) return str("integers from ", rule.min, " to ", rule.max);
  if (has_min) return str("integers >= ", rule.min);
  if (has_max) return str("integers <= ", rule.max);
  return "integers";
}

std::string describe_real_rule(RealRule rule) {
  std::string text = "numbers";
  if (std::isfinite(rule.min)) text += str(rule.min_exclusive ? " > " : " >= ", rule.min);
  if (std::isfinite(rule.max)) text += str(std::isfinite(rule.min) ? " and" : "", " <= ", rule.max);
  return text;
}

// Reads a YAML tree into Config, collecting every problem rather than stopping at the first.
class YamlReader : public ConfigVisitor {
 public:
  YamlReader(YAML::Node root, std::set<std::string> overridden)
      : overridden_(std::move(overridden)) {
    nodes_.push_back(std::move(root));
    seen_.emplace_back();
    keys_.emplace_back();
  }

  void section(const std::string& key, const std::function<void()>& body) override {
    note_key(key);
    const YAML::Node node = child(key);
    path_.push_back(key);
    if (node.IsDefined() && !node.IsNull() && !node.IsMap()) {
      fail(path_string(), str(show(node), " is not a section (valid: a mapping of keys)"));
    }
    // A missing or empty section reads as an empty one (its fields keep their defaults). Note
    // that yaml-cpp's Node::operator= writes into a node instead of rebinding it, and throws on
    // the "zombie" node a missing key returns, hence the push of a fresh node.
    nodes_.push_back(node.IsDefined() && node.IsMap() ? node : YAML::Node(YAML::NodeType::Map));
    seen_.emplace_back();
    keys_.emplace_back();
    body();
    check_unknown_keys();
    keys_.pop_back();
    seen_.pop_back();
    nodes_.pop_back();
    path_.pop_back();
  }

  /// Reports unknown top-level sections; call after the walk.
  void finish() { check_unknown_keys(); }

  void field(const std::string& key, int64_t& value, IntRule rule, const char* /*doc*/) override {
    note_key(key);
    const YAML::Node node = child(key);
    if (!node.IsDefined()) return;
    int64_t parsed = 0;
    if (!as_scalar(node, parsed))
      return fail(key,
                  str(show(node), " is not an integer (valid: ", describe_int_rule(rule), ")"));
    if (parsed < rule.min || parsed > rule.max) {
      return fail(key, str(parsed, " is out of range (valid: ", describe_int_rule(rule), ")"));
    }
    value = parsed;
  }

  void field(const std::string& key, double& value, RealRule rule, const char* /*doc*/) override {
    note_key(key);
    const YAML::Node node = child(key);
    if (!node.IsDefined()) return;
    double parsed = 0;
    if (!as_scalar(node, parsed) || !std::isfinite(parsed)) {
      return fail(key, str(show(node), " is not a number (valid: ", describe_real_rule(rule), ")"));
    }
    const bool below = rule.min_exclusive ? parsed <= rule.min : parsed < rule.min;
    if (below || parsed > rule.max) {
      return fail(key, str(parsed, " is out of range (valid: ", describe_real_rule(rule), ")"));
    }
    value = parsed;
  }

  void field(const std::string& key, bool& value, const char* /*doc*/) override {
    note_key(key);
    const YAML::Node node = child(key);
    if (!node.IsDefined()) return;
    bool parsed = false;
    if (!as_scalar(node, parsed)) {
      return fail(key, str(show(node), " is not a boolean (valid: true, false)"));
    }
    value = parsed;
  }

  void field(const std::string& key, std::string& value, const std::vector<std::string>& choices,
             const char* /*doc*/) override {
    note_key(key);
    const YAML::Node node = child(key);
    if (!node.IsDefined()) return;
    if (node.IsNull()) {
      value.clear();
    } else if (!node.IsScalar()) {
      return fail(key, str(show(node), " is not a string"));
    } else {
      value = node.Scalar();
    }
    if (!choices.empty() && std::find(choices.begin(), choices.end(), value) == choices.end()) {
      const std::string hint = closest(value, choices);
      fail(key, str("'", value, "' is not a valid choice (valid: ", join(choices, ", "),
                    hint.empty() ? "" : str("; did you mean '", hint, "'?"), ")"));
    }
  }

  void field(const std::string& key, std::vector<int64_t>& value, IntRule rule,
             const char* /*doc*/) override {
    note_key(key);
    const YAML::Node node = child(key);
    if (!node.IsDefined()) return;
    const std::string valid =
        str("(valid: a list of ", describe_int_rule(rule), ", e.g. [256, 128])");
    if (!node.IsSequence()) return fail(key, str(show(node), " is not a list ", valid));
    std::vector<int64_t> parsed;
    for (const YAML::Node& item : node) {
      int64_t element = 0;
      if (!as_scalar(item, element) || element < rule.min || element > rule.max) {
        return fail(key, str("element ", show(item), " is not allowed ", valid));
      }
      parsed.push_back(element);
    }
    value = parsed;
  }

  void field(const std::string& key, std::vector<std::string>& value,
             const std::vector<std::string>& choices, const char* /*doc*/) override {
    note_key(key);
    const YAML::Node node = child(key);
    if (!node.IsDefined()) return;
    const std::string valid = str("(valid: a list of ", join(choices, ", "), ")");
    if (!node.IsSequence()) return fail(key, str(show(node), " is not a list ", valid));
    std::vector<std::string> parsed;
    for (const YAML::Node& item : node) {
      const bool known = item.IsScalar() &&
                         std::find(choices.begin(), choices.end(), item.Scalar()) != choices.end();
      if (!known) {
        const std::string hint = item.IsScalar() ? closest(item.Scalar(), choices) : "";
        return fail(key, str("element ", show(item), " is not allowed ", valid,
                             hint.empty() ? "" : str("; did you mean '", hint, "'?")));
      }
      parsed.push_back(item.Scalar());
    }
    value = parsed;
  }

  const std::vector<std::string>& errors() const { return errors_; }

 private:
  template <typename T>
  static bool as_scalar(const YAML::Node& node, T& out) {
    if (!node.IsScalar()) return false;
    try {
      out = node.as<T>();
      return true;
    } catch (const YAML::Exception&) {
      return false;
    }
  }

  YAML::Node child(const std::string& key) const {
    const YAML::Node& parent = nodes_.back();
    if (!parent.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    return parent[key];
  }

  void note_key(const std::string& key) {
    seen_.back().insert(key);
    keys_.back().push_back(key);
  }

  std::string path_string(const std::string& key = "") const {
    std::vector<std::string> parts = path_;
    if (!key.empty()) parts.push_back(key);
    return join(parts, ".");
  }

  void fail(const std::string& key, const std::string& problem) {
    const std::string full = path_.empty() || key == path_string() ? key : path_string(key);
    errors_.push_back(str(full, ": ", problem, overridden_.count(full) ? " (from --set)" : ""));
  }

  void check_unknown_keys() {
    const YAML::Node& node = nodes_.back();
    if (!node.IsMap()) return;
    const std::vector<std::string>& valid = keys_.back();
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      if (seen_.back().count(key)) continue;
      const std::string hint = closest(key, valid);
      const std::string full = path_string(key);
      errors_.push_back(
          str(full, ": unknown key", overridden_.count(full) ? " (from --set)" : "", " (",
              hint.empty() ? "" : str("did you mean '", path_string(hint), "'? "), "valid keys",
              path_.empty() ? "" : str(" under ", path_string()), ": ", join(valid, ", "), ")"));
    }
  }

 private:
  std::set<std::string> overridden_;
  std::vector<YAML::Node> nodes_;
  std::vector<std::set<std::string>> seen_;
  std::vector<std::vector<std::string>> keys_;
  std::vector<std::string> path_;
  std::vector<std::string> errors_;
};

// The shortest decimal text that reads back as exactly `value` (0.05, not 0.050000000000000003).
std::string shortest(double value) {
  char text[32];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

// Emits the resolved configuration.
class YamlWriter : public ConfigVisitor {
 public:
  YamlWriter() { out_ << YAML::BeginMap; }
  std::string text() {
    out_ << YAML::EndMap;
    return out_.c_str();
  }
  void section(const std::string& key, const std::function<void()>& body) override {
    out_ << YAML::Key << key << YAML::Value << YAML::BeginMap;
    body();
    out_ << YAML::EndMap;
  }
  void field(const std::string& key, int64_t& value, IntRule, const char*) override {
    out_ << YAML::Key << key << YAML::Value << value;
  }
  void field(const std::string& key, double& value, RealRule, const char*) override {
    out_ << YAML::Key << key << YAML::Value << shortest(value);
  }
  void field(const std::string& key, bool& value, const char*) override {
    out_ << YAML::Key << key << YAML::Value << value;
  }
  void field(const std::string& key, std::string& value, const std::vector<std::string>&,
             const char*) override {
    out_ << YAML::Key << key << YAML::Value << YAML::DoubleQuoted << value;
  }
  void field(const std::string& key, std::vector<int64_t>& value, IntRule, const char*) override {
    out_ << YAML::Key << key << YAML::Value << YAML::Flow << value;
  }
  void field(const std::string& key, std::vector<std::string>& value,
             const std::vector<std::string>&, const char*) override {
    out_ << YAML::Key << key << YAML::Value << YAML::Flow << value;
  }

 private:
  YAML::Emitter out_;
};

// One line per key: name, type and valid values, default, meaning.
class KeyDescriber : public ConfigVisitor {
 public:
  explicit KeyDescriber(bool markdown) : markdown_(markdown) {
    if (markdown_)
      out_ << "| key | valid values | default | meaning |\n| --- | --- | --- | --- |\n";
  }
  std::string text() const { return out_.str(); }
  void section(const std::string& key, const std::function<void()>& body) override {
    section_ = key;
    body();
  }
  void field(const std::string& key, int64_t& value, IntRule rule, const char* doc) override {
    line(key, describe_int_rule(rule), str(value), doc);
  }
  void field(const std::string& key, double& value, RealRule rule, const char* doc) override {
    line(key, describe_real_rule(rule), str(value), doc);
  }
  void field(const std::string& key, bool& value, const char* doc) override {
    line(key, "true or false", value ? "true" : "false", doc);
  }
  void field(const std::string& key, std::string& value, const std::vector<std::string>& choices,
             const char* doc) override {
    line(key, choices.empty() ? "string" : join(choices, " | "), str("\"", value, "\""), doc);
  }
  void field(const std::string& key, std::vector<int64_t>& value, IntRule rule,
             const char* doc) override {
    line(key, "list of " + describe_int_rule(rule), str("[", join(value, ", "), "]"), doc);
  }
  void field(const std::string& key, std::vector<std::string>& value,
             const std::vector<std::string>& choices, const char* doc) override {
    line(key, "list of " + join(choices, " | "), str("[", join(value, ", "), "]"), doc);
  }

 private:
  void line(const std::string& key, const std::string& valid, const std::string& default_value,
            const char* doc) {
    if (markdown_) {
      out_ << "| `" << section_ << "." << key << "` | " << escape(valid) << " | `" << default_value
           << "` | " << escape(doc) << " |\n";
    } else {
      out_ << section_ << "." << key << "  (" << valid << "; default " << default_value << ")  "
           << doc << "\n";
    }
  }
  static std::string escape(const std::string& text) {  // a '|' would end a table cell
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  }
  bool markdown_;
  std::string section_;
  std::ostringstream out_;
};

// Applies "a.b=value" to the tree; returns the dotted key it set.
std::string apply_override(YAML::Node& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  const std::string key = assignment.substr(0, eq);
  const std::vector<std::string> parts = split(key, '.');
  const bool empty_part =
      std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); });
  if (eq == std::string::npos || empty_part) {
    throw ConfigError(
        str("--set '", assignment, "': expected section.key=value (e.g. --set train.lr=0.01)"));
  }
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError(str("--set '", assignment, "': the value is not valid YAML: ", e.msg));
  }
  YAML::Node node = root;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!node[parts[i]] || node[parts[i]].IsNull())
      node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    const YAML::Node next = node[parts[i]];  // constructed, so it binds (operator= would copy)
    if (!next.IsMap()) {
      throw ConfigError(
          str("--set '", assignment,
              "': ", join(std::vector<std::string>(parts.begin(), parts.begin() + i + 1), "."),
              " is a value, not a section"));
    }
    node.reset(next);
  }
  node[parts.back()] = value;
  return key;
}

Config parse_tree(YAML::Node root, const std::vector<std::string>& overrides,
                  const std::string& origin) {
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) {
    throw ConfigError(str(origin,
                          ": the top level must be a mapping of sections (model, parallel, "
                          "train, data, run)"));
  }
  // `parallel: auto` is the short form of `parallel: {auto: true}`.
  if (root["parallel"].IsScalar() && root["parallel"].Scalar() == "auto") {
    YAML::Node section(YAML::NodeType::Map);
    section["auto"] = true;
    root["parallel"] = section;
  }
  std::set<std::string> overridden;
  for (const std::string& assignment : overrides)
    overridden.insert(apply_override(root, assignment));

  Config config;
  YamlReader reader(root, overridden);
  visit_config(config, reader);
  reader.finish();
  if (!reader.errors().empty()) {
    throw ConfigError(str(origin, ": invalid configuration:\n  ", join(reader.errors(), "\n  ")));
  }
  return config;
}

// yaml-cpp keeps both entries of a repeated key and lookups see the first: a silent choice the
// user never made. Refuse it, naming the key and both lines.
void check_unique_keys(const YAML::Node& node, const std::string& path, const std::string& origin) {
  if (node.IsSequence()) {
    for (const auto& item : node) check_unique_keys(item, path, origin);
    return;
  }
  if (!node.IsMap()) return;
  std::map<std::string, int> seen;  // key -> its line (1-based)
  for (const auto& item : node) {
    const std::string key = item.first.Scalar();
    const std::string full = path.empty() ? key : path + "." + key;
    const int line = item.first.Mark().line + 1;
    const auto [it, fresh] = seen.emplace(key, line);
    if (!fresh) {
      throw ConfigError(str(origin, ":", line, ": ", full, ": the key appears twice (lines ",
                            it->second, " and ", line, "; valid: each key once)"));
    }
    check_unique_keys(item.second, full, origin);
  }
}

}  // namespace

Config parse_config(const std::string& yaml_text, const std::vector<std::string>& overrides,
                    const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(
        str(origin, ":", e.mark.line + 1, ":", e.mark.column + 1, ": not valid YAML: ", e.msg));
  }
  check_unique_keys(root, "", origin);
  return parse_tree(root, overrides, origin);
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ConfigError(str(path,
                          ": is a folder, not a configuration file (valid: a YAML file, e.g. "
                          "configs/gpt-fortunes.yaml)"));
  }
  std::ifstream file(path);
  if (!file) throw ConfigError(str(path, ": cannot open the configuration file"));
  std::stringstream text;
  text << file.rdbuf();
  YAML::Node root;
  try {
    root = YAML::Load(text.str());
  } catch (const YAML::Exception&) {
    return parse_config(text.str(), overrides, path);  // reports where the YAML breaks
  }
  if (!root.IsDefined() || root.IsNull()) {
    throw ConfigError(str(path,
                          ": the configuration is empty (valid: a YAML mapping of sections: "
                          "model, parallel, train, ...; see configs/ for examples)"));
  }
  return parse_config(text.str(), overrides, path);
}

std::string to_yaml(const Config& config) {
  Config copy = config;  // the visitor interface takes mutable references
  YamlWriter writer;
  visit_config(copy, writer);
  return writer.text() + "\n";
}

std::string describe_config_keys() {
  Config defaults;
  KeyDescriber describer(false);
  visit_config(defaults, describer);
  return describer.text();
}

std::string describe_config_markdown() {
  Config defaults;
  KeyDescriber describer(true);
  visit_config(defaults, describer);
  return describer.text();
}

}  // namespace triax
