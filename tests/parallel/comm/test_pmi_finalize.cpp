// pmi1_finalize against a stand-in for hydra's proxy on the other end of a socket pair: the
// request it must send, the acknowledgement it waits for, and the ways hydra can fail to answer.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "parallel/comm/pmi_finalize.h"

namespace {

struct SocketPair {
  int ours = -1;
  int proxy = -1;
  SocketPair() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    ours = fds[0];
    proxy = fds[1];
  }
  ~SocketPair() {
    if (ours >= 0) ::close(ours);
    if (proxy >= 0) ::close(proxy);
  }
  std::string read_request() const {
    std::string got;
    char c = 0;
    while (::read(proxy, &c, 1) == 1) {
      got += c;
      if (c == '\n') break;
    }
    return got;
  }
};

constexpr std::chrono::milliseconds kWait{2000};

}  // namespace

TEST_CASE("pmi1_finalize sends cmd=finalize and returns true on hydra's acknowledgement", "[pmi]") {
  SocketPair pair;
  std::string request;
  std::thread proxy([&] {
    request = pair.read_request();
    const std::string ack = "cmd=finalize_ack\n";
    REQUIRE(::write(pair.proxy, ack.data(), ack.size()) == static_cast<ssize_t>(ack.size()));
  });
  const bool acknowledged = triax::pmi1_finalize(pair.ours, kWait);
  proxy.join();
  CHECK(request == "cmd=finalize\n");
  CHECK(acknowledged);
}

TEST_CASE("pmi1_finalize gives up when hydra is silent, closes, or answers something else",
          "[pmi]") {
  SECTION("silent: false after the timeout, not a hang") {
    SocketPair pair;
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(triax::pmi1_finalize(pair.ours, std::chrono::milliseconds(200)));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1500));
    CHECK(pair.read_request() == "cmd=finalize\n");
  }
  SECTION("closed before answering") {
    SocketPair pair;
    std::thread proxy([&] {
      pair.read_request();
      ::close(pair.proxy);
      pair.proxy = -1;
    });
    CHECK_FALSE(triax::pmi1_finalize(pair.ours, kWait));
    proxy.join();
  }
  SECTION("closed before the request: a failed write, not SIGPIPE") {
    SocketPair pair;
    ::close(pair.proxy);
    pair.proxy = -1;
    CHECK_FALSE(triax::pmi1_finalize(pair.ours, kWait));
  }
  SECTION("another command instead of the acknowledgement") {
    SocketPair pair;
    std::thread proxy([&] {
      pair.read_request();
      const std::string other = "cmd=barrier_out\n";
      REQUIRE(::write(pair.proxy, other.data(), other.size()) ==
              static_cast<ssize_t>(other.size()));
    });
    CHECK_FALSE(triax::pmi1_finalize(pair.ours, kWait));
    proxy.join();
  }
}
