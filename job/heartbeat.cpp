#include "job/heartbeat.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "core/flight_recorder.h"
#include "core/log.h"
#include "core/strings.h"
#include "job/death_watch.h"
#include "job/line_socket.h"
#include "parallel/comm/gather_text.h"

namespace triax {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kBeatSeconds = 1.0;
constexpr int kPollMs = 250;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string one_decimal(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", v);
  return text;
}

// One peer: rank 0's connection to a rank, or a rank's connection to rank 0.
struct Peer {
  int fd = -1;
  int rank = -1;
  std::string buffer;  // bytes received, not yet a whole line
  Clock::time_point heard = Clock::now();
  int64_t step = 0;
  std::string action = "nothing recorded";
  bool gone = false;      // said goodbye, or dropped
  long pgid = 0;          // its process group (a dropped rank's held process is ended by it)
  bool finished = false;  // rank 0: it waits in finish_together
};

std::string flat(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace

HeartbeatMessage parse_heartbeat_line(const std::string& line) {
  HeartbeatMessage m;
  if (line.empty()) return m;
  const std::vector<std::string> parts = split(line, ' ');
  if (line == "X") {
    m.kind = 'X';
  } else if (line[0] == 'B' && parts.size() >= 3 && parts[0] == "B") {
    m.kind = 'B';
    m.step = std::atoll(parts[1].c_str());
    m.text = line.substr(parts[0].size() + parts[1].size() + 2);
  } else if (line[0] == 'L' && parts.size() >= 4 && parts[0] == "L") {
    m.kind = 'L';
    for (const std::string& r : split(parts[1], ',')) m.ranks.push_back(std::atoi(r.c_str()));
    m.silent = parts[2] == "1";
    m.text = line.substr(parts[0].size() + parts[1].size() + parts[2].size() + 3);
  } else if (line[0] == 'D' && parts.size() >= 5 && parts[0] == "D") {
    m.kind = 'D';
    for (const std::string& r : split(parts[1], ',')) m.ranks.push_back(std::atoi(r.c_str()));
    m.silent = parts[2] == "1";
    for (const std::string& g : split(parts[3], ',')) m.pgids.push_back(std::atol(g.c_str()));
    m.text = line.substr(parts[0].size() + parts[1].size() + parts[2].size() + parts[3].size() + 4);
  } else if (line == "F" || line == "G") {
    m.kind = line[0];
  }
  return m;
}

struct Heartbeat::State {
  std::mutex send_mutex;
  std::vector<Peer> peers;  // rank 0: every other rank; else: rank 0
  std::atomic<bool> stopping{false};
  int rank = 0;
  double lost_after_s = 0;
  RankTable table;
  std::vector<int> droppable;
  std::vector<std::string> names;  // each rank's role, or ""
  // The dropped ranks and their process groups (drop_mutex); finish_together's state.
  std::mutex drop_mutex;
  std::vector<int> dropped;
  std::vector<long> dropped_pgids;
  std::atomic<bool> finishing{false};  // rank 0: finish_together waits
  std::atomic<bool> go{false};         // every survivor has finished

  std::string describe(int r) const {
    const RankEntry* entry = nullptr;
    for (const RankEntry& e : table) {
      if (e.rank == r) entry = &e;
    }
    const std::string role =
        r >= 0 && r < static_cast<int>(names.size()) && !names[r].empty() ? names[r] + ", " : "";
    const std::string where = entry == nullptr
                                  ? (role.empty() ? std::string() : str(" (", names[r], ")"))
                                  : str(" (", role, "pid ", entry->pid, " on ", entry->host, ")");
    return str("rank ", r, where);
  }
  // What the lost rank's last beat said (rank 0 sends none).
  std::string last_beat(const Peer& peer) const {
    if (peer.rank == 0) return "";
    return str("; its last beat: step ", peer.step, ", ", peer.action);
  }
  // The survivor on `host` that kills a silent lost rank there (one, so it is said once).
  // (Another rank dropped before is no killer: read by the watcher thread, which alone writes
  // `dropped`, or under drop_mutex.)
  bool is_killer(int lost, const std::string& host) const {
    for (const RankEntry& e : table) {
      if (e.rank != lost && e.host == host &&
          std::find(dropped.begin(), dropped.end(), e.rank) == dropped.end()) {
        return e.rank == rank;
      }
    }
    return false;
  }

  bool on_my_host(const std::string& host) const {
    for (const RankEntry& e : table) {
      if (e.rank == rank) return e.host == host;
    }
    return false;
  }

  // A silent lost rank on this host is SIGKILLed by one survivor there (a stopped process
  // ignores the launcher's SIGTERM and would hold the job).
  void kill_if_mine(int lost, bool silent, const char* why = "so that the job ends") {
    if (!silent) return;
    const RankEntry* self = nullptr;
    for (const RankEntry& e : table) {
      if (e.rank == rank) self = &e;
    }
    for (const RankEntry& e : table) {
      if (e.rank == lost && self != nullptr && e.host == self->host && e.pid > 0 &&
          is_killer(lost, e.host) && ::kill(static_cast<pid_t>(e.pid), SIGKILL) == 0) {
        log::error(str("heartbeat: killed rank ", lost, " (pid ", e.pid,
                       ", stopped or frozen on this host) ", why));
      }
    }
  }

  // After the goodbye: a socket closed with unread bytes is reset, not closed, and a reset can
  // discard the goodbye before the peer reads it (it would then report this rank lost). So
  // this end stops writing, and reads until each peer has closed its end too (it does on our
  // goodbye, or has said its own) or `seconds` have passed.
  void linger(double seconds) {
    std::lock_guard<std::mutex> lock(send_mutex);
    for (Peer& p : peers) ::shutdown(p.fd, SHUT_WR);
    const Clock::time_point start = Clock::now();
    std::vector<bool> done(peers.size(), false);
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<size_t> which;
      for (size_t i = 0; i < peers.size(); ++i) {
        if (!done[i]) {
          fds.push_back(pollfd{peers[i].fd, POLLIN, 0});
          which.push_back(i);
        }
      }
      if (fds.empty() || since(start) > seconds) return;
      ::poll(fds.data(), fds.size(), 100);
      for (size_t k = 0; k < fds.size(); ++k) {
        char chunk[4096];
        for (;;) {
          const ssize_t n = ::recv(fds[k].fd, chunk, sizeof(chunk), MSG_DONTWAIT);
          if (n > 0) continue;
          if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            done[which[k]] = true;
          }
          break;
        }
      }
    }
  }

  // Says goodbye on every connection (once).
  void goodbye() {
    if (stopping.exchange(true)) return;
    std::lock_guard<std::mutex> lock(send_mutex);
    for (Peer& p : peers) send_line(p.fd, "X");
  }

  // Ends this process after ranks were lost: says so, dumps the flight record, waits for the
  // other survivors to say it too, kills a silent lost rank on this host, and exits 1 (the
  // launcher then ends whatever is left).
  [[noreturn]] void end_process(const std::vector<int>& lost, bool silent,
                                const std::string& message, bool printed = false) {
    stopping = true;
    death_watch_done();  // this rank ends on purpose: the death watch must not blame it
    if (!printed) log::error(str("heartbeat: ", message));
    try {
      flight::dump(str("heartbeat: ", message));
    } catch (const std::exception&) {  // a full disk: the message above is what counts
    }
    // Every survivor prints before any of them ends (the launcher ends the rest as soon as one
    // process ends, a killed one too).
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    for (int r : lost) kill_if_mine(r, silent);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(1);
  }

  // "rank 2 (pid 7 on n2)" or "ranks 2 (pid 7 on n2), 3 (pid 8 on n2)"; and when every rank of
  // a host is among them, that the host itself is gone.
  std::string describe_all(const std::vector<int>& lost) const {
    std::vector<std::string> each;
    for (int r : lost) each.push_back(describe(r).substr(5));
    std::string text = str(lost.size() == 1 ? "rank " : "ranks ", join(each, ", "),
                           lost.size() == 1 ? " is lost: " : " are lost: ");
    return text;
  }
  std::string hosts_gone(const std::vector<int>& lost) const {
    std::vector<std::string> hosts;
    for (const RankEntry& e : table) {
      if (std::find(hosts.begin(), hosts.end(), e.host) != hosts.end()) continue;
      bool all = true, any = false;
      for (const RankEntry& f : table) {
        if (f.host != e.host) continue;
        const bool gone = std::find(lost.begin(), lost.end(), f.rank) != lost.end();
        all = all && gone;
        any = any || gone;
      }
      if (all && any) hosts.push_back(e.host);
    }
    if (hosts.empty()) return "";
    return str("; every rank on ", join(hosts, ", "), " is gone: the node is down or cut off");
  }

  // Rank 0: ranks were lost. Tell the others (they print it and end), then end.
  [[noreturn]] void declare_lost(const std::vector<Peer*>& lost, bool silent,
                                 const std::string& why) {
    std::vector<int> ranks;
    for (const Peer* p : lost) ranks.push_back(p->rank);
    // Where the job could go on without some ranks, say why not without these.
    const std::string undroppable =
        droppable.empty() ? std::string()
                          : "; the job cannot go on without it (only workers other than worker 0 "
                            "are dropped): it ends, and --resume latest continues from the last "
                            "checkpoint";
    const std::string message =
        str(describe_all(ranks), why, hosts_gone(ranks), last_beat(*lost.front()), undroppable);
    // First the message (the launcher may end this rank as soon as another one exits).
    log::error(str("heartbeat: ", message));
    {
      std::vector<std::string> names;
      for (int r : ranks) names.push_back(std::to_string(r));
      std::lock_guard<std::mutex> lock(send_mutex);
      for (Peer& p : peers) {
        if (std::find(lost.begin(), lost.end(), &p) == lost.end() && !p.gone) {
          send_line(p.fd, str("L ", join(names, ","), " ", silent ? 1 : 0, " ", flat(message)));
        }
      }
    }
    end_process(ranks, silent, message, true);
  }

  bool droppable_all(const std::vector<Peer*>& lost) const {
    return std::all_of(lost.begin(), lost.end(), [&](const Peer* p) {
      return std::find(droppable.begin(), droppable.end(), p->rank) != droppable.end();
    });
  }

  // Records dropped ranks; a silent one on this host is killed now (it must not wake up and
  // push), its held process group at finish_together.
  void record_dropped(const std::vector<int>& ranks, const std::vector<long>& pgids, bool silent) {
    {
      std::lock_guard<std::mutex> lock(drop_mutex);
      for (size_t k = 0; k < ranks.size(); ++k) {
        dropped.push_back(ranks[k]);
        dropped_pgids.push_back(k < pgids.size() ? pgids[k] : 0);
      }
    }
    for (int r : ranks) kill_if_mine(r, silent, "so that it cannot come back");
  }

  // Rank 0: ranks the job goes on without were lost. Name them, tell the others, go on.
  void declare_dropped(const std::vector<Peer*>& lost, bool silent, const std::string& why) {
    std::vector<int> ranks;
    std::vector<long> pgids;
    std::vector<std::string> names, groups;
    for (Peer* p : lost) {
      ranks.push_back(p->rank);
      pgids.push_back(p->pgid);
      names.push_back(std::to_string(p->rank));
      groups.push_back(std::to_string(p->pgid));
    }
    const std::string message = str(describe_all(ranks), why, last_beat(*lost.front()),
                                    "; the job goes on without it (a dropped worker)");
    log::warn(str("heartbeat: ", message));
    {
      // To the dropped too: one that was only slow learns it is out (dropped_self).
      std::lock_guard<std::mutex> lock(send_mutex);
      for (Peer& p : peers) {
        if (!p.gone) {
          send_line(p.fd, str("D ", join(names, ","), " ", silent ? 1 : 0, " ", join(groups, ","),
                              " ", flat(message)));
        }
      }
    }
    for (Peer* p : lost) p->gone = true;
    record_dropped(ranks, pgids, silent);
  }

  // This rank was dropped (it was silent, so it was only slow, or stopped and continued): the
  // others train on without it. It must not push, meet or end the job: it stops itself, and is
  // ended with the job (by a survivor on its host, or by the launcher).
  void dropped_self(const std::string& text) {
    log::warn(str("heartbeat: this rank was dropped (", text,
                  "); it stops here, and is ended when the others have finished"));
    death_watch_done();  // not a death to report
    std::fflush(stdout);
    std::fflush(stderr);
    ::raise(SIGSTOP);
  }

  // Rank 0 in finish_together: once every rank still here has finished too, all go.
  void release_if_all_finished() {
    if (rank != 0 || !finishing || go) return;
    for (const Peer& p : peers) {
      if (!p.gone && !p.finished) return;
    }
    std::lock_guard<std::mutex> lock(send_mutex);
    for (Peer& p : peers) {
      if (!p.gone) send_line(p.fd, "G");
    }
    go = true;
  }

  // Reads a peer's lines; false when its connection closed.
  bool hear(Peer& p) {
    std::vector<std::string> lines;
    const bool open = receive_lines(p.fd, p.buffer, &lines);
    for (const std::string& line : lines) {
      const HeartbeatMessage m = parse_heartbeat_line(line);
      if (m.kind == 'B') {
        p.heard = Clock::now();
        if (rank == 0) {
          p.step = m.step;
          p.action = m.text;
        }
      } else if (m.kind == 'X') {
        p.gone = true;
        std::lock_guard<std::mutex> lock(send_mutex);
        // Rank 0 ends on purpose (its own error, often on the same loss its watcher is still
        // gathering): the heartbeat is over for this rank, which says so too, or rank 0 would
        // take the close below for a lost rank.
        if (rank != 0) send_line(p.fd, "X");
        // Our end closes too: the peer lingers until it sees that (see linger()).
        ::shutdown(p.fd, SHUT_WR);
      } else if (m.kind == 'L' && rank != 0) {
        end_process(m.ranks, m.silent, m.text);
      } else if (m.kind == 'D' && rank != 0) {
        if (std::find(m.ranks.begin(), m.ranks.end(), rank) != m.ranks.end()) dropped_self(m.text);
        record_dropped(m.ranks, m.pgids, m.silent);
      } else if (m.kind == 'F' && rank == 0) {
        p.finished = true;
      } else if (m.kind == 'G' && rank != 0) {
        go = true;
      }
    }
    return open;
  }

  void watch() {
    Clock::time_point last_beat = Clock::now() - std::chrono::seconds(10);
    const std::string closed =
        "the heartbeat connection closed without a goodbye: the process ended (killed, crashed) "
        "or its node went down";
    while (!stopping) {
      std::vector<pollfd> fds;
      // Not a peer that is gone: a dropped one's closed socket would wake the poll at once,
      // forever.
      for (const Peer& p : peers) fds.push_back(pollfd{p.gone ? -1 : p.fd, POLLIN, 0});
      ::poll(fds.data(), fds.size(), kPollMs);
      if (stopping) return;
      if (since(last_beat) >= kBeatSeconds) {
        last_beat = Clock::now();
        const std::string beat = rank == 0
                                     ? std::string("B 0 -")
                                     : str("B ", flight::step(), " ", flat(flight::last_action()));
        std::lock_guard<std::mutex> lock(send_mutex);
        for (Peer& p : peers) {
          if (!p.gone) send_line(p.fd, beat);
        }
      }
      std::vector<Peer*> ended, silent;
      for (Peer& p : peers) {
        if (p.gone) continue;
        const bool open = hear(p);
        if (stopping || p.gone) continue;
        if (!open) {
          ended.push_back(&p);
        } else if (since(p.heard) > lost_after_s) {
          silent.push_back(&p);
        }
      }
      if (!ended.empty()) {
        if (rank != 0) end_process({0}, false, str(describe_all({0}), closed));
        // A lost node closes all its ranks' connections at once: name them together.
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        for (Peer& p : peers) {
          if (p.gone || std::find(ended.begin(), ended.end(), &p) != ended.end()) continue;
          // A survivor that ends on its own error meanwhile says goodbye, then closes: its
          // goodbye and the close arrive in one read, and it is not lost.
          const bool open = hear(p);
          if (!open && !p.gone) ended.push_back(&p);
        }
        std::sort(ended.begin(), ended.end(), [](Peer* a, Peer* b) { return a->rank < b->rank; });
        if (droppable_all(ended)) {
          declare_dropped(ended, false, closed);
        } else {
          declare_lost(ended, false, closed);
        }
      }
      // A silent peer may have said goodbye meanwhile (read in the ended branch above).
      silent.erase(std::remove_if(silent.begin(), silent.end(), [](Peer* p) { return p->gone; }),
                   silent.end());
      if (!silent.empty()) {
        const std::string why =
            str("no heartbeat for ", one_decimal(since(silent.front()->heard)),
                " s (comm.heartbeat_s = ", one_decimal(lost_after_s),
                "): the process is stopped or frozen, or its node is unreachable");
        if (rank != 0) end_process({0}, true, str(describe_all({0}), why));
        if (droppable_all(silent)) {
          declare_dropped(silent, true, why);
        } else {
          declare_lost(silent, true, why);
        }
      }
      release_if_all_finished();
    }
  }
};

namespace {
std::mutex g_current_mutex;
std::weak_ptr<Heartbeat::State> g_current;
}  // namespace

namespace {

// Rank 0: every other rank connects to `listener` and says who it is ("H RANK PGID"); their
// peers.
std::vector<Peer> accept_peers(int listener, int port, int others) {
  std::vector<Peer> peers;
  const Clock::time_point start = Clock::now();
  const double deadline = std::max(30.0, Communicator::timeout());
  while (static_cast<int>(peers.size()) < others) {
    pollfd p{listener, POLLIN, 0};
    if (since(start) > deadline) {
      ::close(listener);
      throw Error(str("heartbeat: only ", peers.size(), " of ", others,
                      " ranks reached rank 0's heartbeat port ", port, " within ",
                      one_decimal(deadline), " s (a firewall? comm.heartbeat_s: 0 runs without)"));
    }
    if (::poll(&p, 1, 200) != 1) continue;
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Peer peer;
    peer.fd = fd;
    // The hello: "H RANK PGID".
    const Clock::time_point hello = Clock::now();
    std::vector<std::string> lines;
    while (lines.empty() && since(hello) < 10) {
      pollfd q{fd, POLLIN, 0};
      ::poll(&q, 1, 200);
      if (!receive_lines(peer.fd, peer.buffer, &lines)) break;
    }
    if (lines.empty() || lines[0].rfind("H ", 0) != 0) {
      ::close(fd);
      continue;
    }
    peer.rank = std::atoi(lines[0].c_str() + 2);
    const std::vector<std::string> hello_parts = split(lines[0], ' ');
    if (hello_parts.size() > 2) peer.pgid = std::atol(hello_parts[2].c_str());
    peer.heard = Clock::now();
    peers.push_back(std::move(peer));
  }
  ::close(listener);
  return peers;
}

// Any other rank: its connection to rank 0 (over loopback on rank 0's host, else one of the
// addresses rank 0 offered), after its hello.
Peer connect_to_rank0(int rank, int port, const std::vector<std::string>& addresses,
                      const std::string& host0) {
  int fd = -1;
  for (const std::string& a : addresses) {
    if ((fd = connect_to(a, port, 10)) >= 0) break;
  }
  if (fd < 0) {
    throw Error(str("heartbeat: rank ", rank, " cannot reach rank 0's heartbeat port ", port,
                    " on ", host0, " (tried ", join(addresses, ", "),
                    "; comm.heartbeat_s: 0 runs without a heartbeat)"));
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  Peer peer;
  peer.fd = fd;
  peer.rank = 0;
  send_line(fd, str("H ", rank, " ", static_cast<long>(::getpgrp())));
  return peer;
}

}  // namespace

Heartbeat::Heartbeat(Communicator& world, const RankTable& table, double lost_after_s,
                     HeartbeatRoles roles) {
  if (lost_after_s <= 0 || world.size() < 2) return;
  auto state = std::make_shared<State>();
  state->rank = world.rank();
  state->lost_after_s = lost_after_s;
  state->table = table;
  state->droppable = std::move(roles.droppable);
  state->names = std::move(roles.names);
  // Rank 0 listens and offers its port and addresses to every rank.
  int port = 0;
  int listener = -1;
  std::string offer;
  if (world.rank() == 0) {
    listener = listen_any(&port);
    offer = str(port, " ", join(ipv4_addresses(), ","));
  }
  const std::vector<std::string> offers = all_gather_text(world, offer);
  const std::vector<std::string> parts = split(offers.at(0), ' ');
  port = std::atoi(parts.at(0).c_str());
  const std::string my_host =
      world.rank() < static_cast<int>(table.size()) ? table[world.rank()].host : "";
  const std::string host0 = table.empty() ? "" : table[0].host;
  if (world.rank() == 0) {
    state->peers = accept_peers(listener, port, world.size() - 1);
  } else {
    std::vector<std::string> addresses;
    if (my_host == host0) {
      addresses.push_back("127.0.0.1");  // same host: never leave it
    } else if (parts.size() > 1) {
      addresses = split(parts[1], ',');
    }
    state->peers.push_back(connect_to_rank0(world.rank(), port, addresses, host0));
  }
  for (Peer& p : state->peers) p.heard = Clock::now();
  state_ = state;
  thread_ = std::thread([state] { state->watch(); });
  std::lock_guard<std::mutex> lock(g_current_mutex);
  g_current = state;
}

void Heartbeat::stop() {
  end(true);
}

HeldProcesses Heartbeat::finish_together(double timeout_s) {
  if (!state_) return {};
  State& s = *state_;
  if (s.rank == 0) {
    s.finishing = true;
  } else {
    std::lock_guard<std::mutex> lock(s.send_mutex);
    for (Peer& p : s.peers) send_line(p.fd, "F");
  }
  const Clock::time_point start = Clock::now();
  while (!s.go && since(start) < timeout_s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!s.go) {
    log::warn(str("heartbeat: the other ranks did not all finish within ", one_decimal(timeout_s),
                  " s; this rank ends anyway"));
  }
  // The dropped ranks' held processes on this host (one survivor ends each): their supervisors
  // kept the launcher from seeing them end while the others trained.
  HeldProcesses held;
  std::lock_guard<std::mutex> lock(s.drop_mutex);
  for (size_t k = 0; k < s.dropped.size(); ++k) {
    const int r = s.dropped[k];
    const long group = s.dropped_pgids[k];
    for (const RankEntry& e : s.table) {
      if (e.rank != r) continue;
      bool survivor_there = false;  // a rank still here on its host
      for (const RankEntry& f : s.table) {
        survivor_there = survivor_there ||
                         (f.host == e.host && f.rank != r &&
                          std::find(s.dropped.begin(), s.dropped.end(), f.rank) == s.dropped.end());
      }
      // Its held process is its own process group (hydra and srun start each rank in one):
      // never ours, and never the dead core's pid (reaped, perhaps reused). Without one, or
      // with no rank left on its host, the launcher must end it.
      const bool own_group = group > 0 && group != static_cast<long>(::getpgrp());
      if (!survivor_there || !own_group) {
        if (s.rank == 0) held.orphaned.push_back(r);
        continue;
      }
      if (s.is_killer(r, e.host) && s.on_my_host(e.host)) held.mine.push_back(-group);
    }
  }
  return held;
}

void end_held_processes(const HeldProcesses& held) {
  if (held.mine.empty()) return;
  // The other survivors end first (the launcher may end the job once a held process ends).
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (long t : held.mine) ::kill(static_cast<pid_t>(t), SIGKILL);
}

void Heartbeat::end(bool linger) {
  if (!state_) return;
  state_->goodbye();
  if (thread_.joinable()) thread_.join();
  // A socket closed with unread bytes, or one the peer writes to after the close, is reset,
  // and a reset can make the peer drop our goodbye unread (rank 0 would then name this rank
  // lost): wait until the peers have read it, briefly on the failure path (rank 0 reads within
  // the 0.3 s it gathers a lost node's ranks; a stopped peer must not hold the error back).
  state_->linger(linger ? 2.0 : 0.5);
  for (Peer& p : state_->peers) ::close(p.fd);
  state_->peers.clear();
  state_.reset();
}

Heartbeat::~Heartbeat() {
  // Unwinding to the failure path: say goodbye, and wait for the peers only briefly (a stopped
  // one would hold the error's report back).
  end(false);
}

std::vector<int> heartbeat_dropped_ranks() {
  std::shared_ptr<Heartbeat::State> state;
  {
    std::lock_guard<std::mutex> lock(g_current_mutex);
    state = g_current.lock();
  }
  if (!state) return {};
  std::lock_guard<std::mutex> lock(state->drop_mutex);
  std::vector<int> ranks = state->dropped;
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

void heartbeat_goodbye() {
  std::shared_ptr<Heartbeat::State> state;
  {
    std::lock_guard<std::mutex> lock(g_current_mutex);
    state = g_current.lock();
  }
  if (state) state->goodbye();
}

}  // namespace triax
