#include "core/log.h"

#include <cstdio>
#include <mutex>

namespace triax::log {
namespace {

std::string g_prefix = "[triax]";
bool g_is_root = true;
std::mutex g_mutex;

void emit(std::FILE* stream, const char* level, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_mutex);
  // Every line gets the prefix (output of many ranks interleaves line by line), and each line
  // is one fprintf so that lines from different ranks do not interleave mid-line.
  std::size_t start = 0;
  do {
    const std::size_t end = message.find('\n', start);
    const std::string line = message.substr(start, end == std::string::npos ? end : end - start);
    std::fprintf(stream, "%s %s%s\n", g_prefix.c_str(), level, line.c_str());
    start = end == std::string::npos ? end : end + 1;
  } while (start != std::string::npos && start < message.size());
  std::fflush(stream);
}

}  // namespace

void set_prefix(const std::string& prefix) {
  g_prefix = prefix;
}
const std::string& prefix() {
  return g_prefix;
}
void set_is_root(bool is_root) {
  g_is_root = is_root;
}
bool is_root() {
  return g_is_root;
}

void info(const std::string& message) {
  if (g_is_root) emit(stdout, "", message);
}
void warn(const std::string& message) {
  emit(stderr, "warning: ", message);
}
void error(const std::string& message) {
  emit(stderr, "error: ", message);
}

}  // namespace triax::log
