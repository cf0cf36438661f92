#include "checkpoint/state_name.h"

#include <cstdlib>

#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

// "c<digits>/" at the start of `text`: the chunk and the rest; false otherwise.
bool take_chunk(const std::string& text, int* chunk, std::string* rest) {
  const size_t slash = text.find('/');
  if (text.size() < 3 || text[0] != 'c' || slash == std::string::npos || slash < 2) return false;
  for (size_t i = 1; i < slash; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  *chunk = std::atoi(text.substr(1, slash - 1).c_str());
  *rest = text.substr(slash + 1);
  return !rest->empty();
}

}  // namespace

StateName StateName::of_parameter(int chunk, std::string parameter, std::string state) {
  StateName n;
  n.chunk = chunk;
  n.parameter = std::move(parameter);
  n.state = std::move(state);
  return n;
}

StateName StateName::of_rng(int chunk, std::string stream) {
  StateName n;
  n.chunk = chunk;
  n.parameter = std::move(stream);
  n.rng = true;
  return n;
}

StateName StateName::parse(const std::string& name) {
  StateName n;
  std::string rest = name;
  if (name.rfind("rng/", 0) == 0) {
    n.rng = true;
    if (!take_chunk(name.substr(4), &n.chunk, &n.parameter)) {
      throw Error(
          triax::str("checkpoint tensor name '", name, "': expected rng/c<chunk>/<stream>"));
    }
    return n;
  }
  if (name.size() > 1 && name[0] == 'c' && name.find('/') != std::string::npos &&
      !take_chunk(name, &n.chunk, &rest)) {
    throw Error(triax::str("checkpoint tensor name '", name, "': expected c<chunk>/<parameter>"));
  }
  const size_t at = rest.find('@');
  n.parameter = rest.substr(0, at);
  if (at != std::string::npos) n.state = rest.substr(at + 1);
  if (n.parameter.empty() || (at != std::string::npos && n.state.empty())) {
    throw Error(triax::str("checkpoint tensor name '", name, "': expected <parameter>[@<state>]"));
  }
  return n;
}

std::string StateName::str() const {
  const std::string chunk_part = chunk == kNoChunk ? "" : triax::str("c", chunk, "/");
  if (rng) return "rng/" + chunk_part + parameter;
  return chunk_part + parameter + (state.empty() ? "" : "@" + state);
}

StateName StateName::in_chunk(int new_chunk) const {
  StateName n = *this;
  n.chunk = new_chunk;
  return n;
}

}  // namespace triax
