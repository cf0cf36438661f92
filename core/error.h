// defines: triax::Error, triax::ConfigError, triax::TimeoutError, TRIAX_CHECK
//
// Two kinds of failure. A ConfigError is the user's to fix (bad YAML, bad layout, bad launch): its
// message names the key, the value, the rule and what would be valid, and carries no file:line.
// An Error is anything else (a library call failed, an invariant broke): TRIAX_CHECK adds
// file:line so a bug report points at the code.
#pragma once

#include <stdexcept>
#include <string>

#include "core/strings.h"

namespace triax {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ConfigError : public Error {
 public:
  using Error::Error;
};

/// A blocking wait exceeded comm.timeout_s: a peer is stuck, stopped or gone. Its message names
/// what was waited for (and the peer, when the operation has one).
class TimeoutError : public Error {
 public:
  using Error::Error;
};

[[noreturn]] void throw_check_failure(const char* file, int line, const char* cond,
                                      const std::string& message);

}  // namespace triax

/// TRIAX_CHECK(cond, parts...): throws triax::Error "file:line: check `cond` failed: parts...".
#define TRIAX_CHECK(cond, ...)                                                            \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      ::triax::throw_check_failure(__FILE__, __LINE__, #cond, ::triax::str(__VA_ARGS__)); \
    }                                                                                     \
  } while (false)
