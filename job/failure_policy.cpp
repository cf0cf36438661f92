#include "job/failure_policy.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "core/error.h"
#include "core/flight_recorder.h"
#include "core/log.h"
#include "core/strings.h"
#include "job/death_watch.h"
#include "job/heartbeat.h"

namespace triax {
namespace {

// The host name of an IPv4 address by reverse lookup, or "".
std::string resolve_host(const std::string& address) {
  sockaddr_in socket_address{};
  socket_address.sin_family = AF_INET;
  if (::inet_pton(AF_INET, address.c_str(), &socket_address.sin_addr) != 1) return "";
  char host[256] = {0};
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&socket_address), sizeof(socket_address), host,
                    sizeof(host), nullptr, 0, NI_NAMEREQD) != 0) {
    return "";
  }
  return host;
}

std::string this_host() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

}  // namespace

FailureResponse respond_to_failure(bool timeout, Backend backend, int rank, double timeout_s,
                                   bool wrote_record) {
  FailureResponse response;
  if (!timeout) return response;
  const double grace = std::clamp(timeout_s / 4, 1.0, 10.0);
  response.grace_seconds = rank == 0 ? grace / 2 : grace;
  response.print_summary = rank == 0 && wrote_record;
  response.kill_silent_ranks = backend == Backend::kTcp && wrote_record;
  return response;
}

std::string peer_ranks_note(const std::string& message, const RankTable& table,
                            const std::function<std::string(const std::string&)>& host_of) {
  static const std::regex kAddress(R"(\[(\d+\.\d+\.\d+\.\d+)\]:\d+)");
  std::smatch match;
  if (!std::regex_search(message, match, kAddress)) return "";
  const std::string address = match[1].str();
  const std::string host = host_of(address);
  if (host.empty()) return "";
  const std::vector<int> ranks = ranks_on_host(table, host);
  if (ranks.empty()) return "";
  return str("the lost connection was to ", address, " = host ", host, ", where rank",
             ranks.size() > 1 ? "s " : " ", join(ranks, ","),
             " ran; if all of them ended at once, that node was lost");
}

std::vector<RankEntry> silent_local_ranks(const RankTable& table, const std::string& host, int self,
                                          const std::function<bool(int)>& has_record) {
  std::vector<RankEntry> silent;
  for (const RankEntry& e : table) {
    if (e.rank != self && e.host == host && e.pid > 0 && !has_record(e.rank)) silent.push_back(e);
  }
  return silent;
}

void end_job_after_error(const World& world, const std::exception& error, int exit_code, int rank,
                         int world_size, const RankTable& table) {
  death_watch_done();  // 1
  heartbeat_goodbye();
  log::error(error.what());  // 2
  if (const std::string note = peer_ranks_note(error.what(), table, resolve_host); !note.empty()) {
    log::error(note);
  }
  const bool timeout = dynamic_cast<const TimeoutError*>(&error) != nullptr;
  std::string path;
  try {  // 3
    path = flight::dump(timeout ? "timeout" : str("error: ", error.what()));
    if (!path.empty()) {
      log::error(str("flight recorder written to ", path, "; all ranks': triax flight RUN_DIR"));
    }
  } catch (const std::exception& dump_error) {
    log::error(str("flight recorder not written: ", dump_error.what()));
  }
  const FailureResponse response = respond_to_failure(timeout, world.backend(), rank,
                                                      Communicator::timeout(), !path.empty());  // 4
  std::this_thread::sleep_for(std::chrono::duration<double>(response.grace_seconds));
  // A configuration error found once the world is up is often found by several ranks at once
  // (a parameter server's workers and servers refuse together): a moment for the others to
  // print theirs before this abort ends them.
  if (exit_code == 2 && response.grace_seconds == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (response.print_summary) log::error(flight::summary(world_size));
  if (response.kill_silent_ranks) {
    const auto has_record = [](int r) { return std::filesystem::exists(flight::dump_path(r)); };
    for (const RankEntry& e : silent_local_ranks(table, this_host(), rank, has_record)) {
      if (::kill(static_cast<pid_t>(e.pid), SIGKILL) == 0) {
        log::error(str("rank ", e.rank, " (pid ", e.pid, ") did not answer within comm.timeout_s ",
                       "and wrote no flight record: killed it so that the job ends"));
      }
    }
  }
  world.abort(exit_code);  // 5
}

}  // namespace triax
