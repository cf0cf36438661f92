#include "parallel/comm/pmi_finalize.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace triax {

bool pmi1_finalize(int fd, std::chrono::milliseconds timeout) {
  const std::string request = "cmd=finalize\n";
  size_t sent = 0;
  while (sent < request.size()) {
    // The process manager may close its end at any moment: MSG_NOSIGNAL makes that a failed
    // send, not a SIGPIPE that ends the process with a signal.
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, request.data() + sent, request.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string reply;
  while (reply.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd ready{fd, POLLIN, 0};
    const int polled = ::poll(&ready, 1, static_cast<int>(left.count()));
    if (polled < 0 && errno == EINTR) continue;
    if (polled <= 0) return false;
    char buffer[256];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    reply.append(buffer, static_cast<size_t>(n));
  }
  return reply.rfind("cmd=finalize_ack", 0) == 0;
}

}  // namespace triax
