#include "core/flight_recorder.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "core/atomic_file.h"
#include "core/json_line.h"
#include "core/run_paths.h"
#include "core/strings.h"

namespace triax::flight {
namespace {

using Clock = std::chrono::steady_clock;

struct Record {
  uint64_t id = 0;
  Event event;
  int64_t step = -1;
  int microbatch = -1;
  std::string what;
  double start_s = 0;
  double end_s = -1;
};

struct State {
  std::mutex mutex;
  std::vector<Record> ring = std::vector<Record>(kCapacity);
  uint64_t next_id = 1;
  int64_t step = 0;
  int rank = 0;
  int world_size = 1;
  std::string dir;
  Clock::time_point start = Clock::now();
};

State& state() {
  static State s;
  return s;
}

thread_local std::string t_label;
thread_local int t_microbatch = -1;
volatile std::sig_atomic_t g_dump_requested = 0;
bool g_abandoning = false;

double now_s() {
  return std::chrono::duration<double>(Clock::now() - state().start).count();
}

std::string mib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return bytes >= (1 << 20) ? text : str(bytes, " bytes");
}

std::string describe_record(const Record& r) {
  std::string text = r.event.kind;
  if (r.event.peer >= 0)
    text += str(std::string(r.event.kind) == "recv" ? " from" : " to", " rank ", r.event.peer);
  if (!r.what.empty()) text += str(" of ", r.what);
  text += str(" over ", r.event.group, " (", mib(r.event.bytes));
  if (r.event.seq >= 0) text += str(", collective #", r.event.seq, " on that group");
  text += str("), step ", r.step);
  if (r.microbatch >= 0) text += str(", micro-batch ", r.microbatch);
  return text;
}

extern "C" void on_sigusr2(int) {
  g_dump_requested = 1;
}

}  // namespace

uint64_t begin(const Event& event) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Record& r = s.ring[s.next_id % kCapacity];
  r.id = s.next_id++;
  r.event = event;
  r.step = s.step;
  r.microbatch = t_microbatch;
  r.what = t_label;
  r.start_s = now_s();
  r.end_s = -1;
  return r.id;
}

void end(uint64_t id) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Record& r = s.ring[id % kCapacity];
  if (r.id == id) r.end_s = now_s();
}

Label::Label(std::string what) : previous_(std::move(t_label)) {
  t_label = std::move(what);
}
Label::~Label() {
  t_label = std::move(previous_);
}

void set_step(int64_t step) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().step = step;
}
void set_microbatch(int microbatch) {
  t_microbatch = microbatch;
}
void set_rank(int rank, int world_size) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().rank = rank;
  state().world_size = world_size;
}
int rank() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().rank;
}
int64_t step() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().step;
}
void set_dump_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().dir = dir;
}

std::string describe(uint64_t id) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  const Record& r = s.ring[id % kCapacity];
  return r.id == id ? describe_record(r) : str("operation #", id);
}

std::string dump_path(int rank) {
  return str(state().dir, "/", RunPaths::flight_record_name(rank));
}

namespace {

// The ring's records, oldest first (the caller holds the mutex).
std::vector<const Record*> recorded(const State& s) {
  std::vector<const Record*> events;
  for (uint64_t id = s.next_id > kCapacity ? s.next_id - kCapacity : 1; id < s.next_id; ++id) {
    events.push_back(&s.ring[id % kCapacity]);
  }
  return events;
}

// The pending action (a wait that never ended) is the one to name; else the last one.
std::string describe_last(const std::vector<const Record*>& events) {
  const Record* last = nullptr;
  for (const Record* r : events) {
    if (r->end_s < 0) last = r;
  }
  if (last == nullptr && !events.empty()) last = events.back();
  if (last == nullptr) return "nothing recorded";
  return (last->end_s < 0 ? "waiting: " : "done: ") + describe_record(*last);
}

}  // namespace

std::string last_action() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return describe_last(recorded(s));
}

std::string dump(const std::string& reason) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.dir.empty()) return "";
  const std::vector<const Record*> events = recorded(s);
  JsonLine head;
  head.add("rank", static_cast<int64_t>(s.rank))
      .add("world_size", static_cast<int64_t>(s.world_size))
      .add("reason", reason)
      .add("step", s.step)
      .add("now_s", now_s())
      .add("last", describe_last(events));
  std::string text = head.str();
  text.pop_back();  // reopen the object for the events
  text += ", \"events\": [\n";
  for (size_t i = 0; i < events.size(); ++i) {
    const Record& r = *events[i];
    JsonLine e;
    e.add("id", static_cast<int64_t>(r.id))
        .add("kind", std::string(r.event.kind))
        .add("group", r.event.group)
        .add("peer", static_cast<int64_t>(r.event.peer))
        .add("tag", static_cast<int64_t>(r.event.tag))
        .add("bytes", r.event.bytes)
        .add("seq", r.event.seq)
        .add("step", r.step)
        .add("microbatch", static_cast<int64_t>(r.microbatch))
        .add("what", r.what)
        .add("start_s", r.start_s)
        .add("end_s", r.end_s);
    text += "  " + e.str() + (i + 1 < events.size() ? ",\n" : "\n");
  }
  text += "]}\n";
  std::error_code ec;
  std::filesystem::create_directories(s.dir, ec);
  const std::string path = str(s.dir, "/", RunPaths::flight_record_name(s.rank));
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
  return path;
}

namespace {

// The "last" field of a dump written by dump() (JsonLine escapes only \ and ").
std::string last_action_in(const std::string& path) {
  std::ifstream in(path);
  std::string head;
  if (!std::getline(in, head)) return "";
  const std::string key = "\"last\": \"";
  size_t at = head.find(key);
  if (at == std::string::npos) return "";
  std::string value;
  for (at += key.size(); at < head.size() && head[at] != '"'; ++at) {
    if (head[at] == '\\' && at + 1 < head.size()) ++at;
    value += head[at];
  }
  return value;
}

}  // namespace

std::string summary(int world_size) {
  std::string text =
      str("last action of every rank (", state().dir, "; `triax flight RUN_DIR` analyses them):");
  for (int r = 0; r < world_size; ++r) {
    const std::string last = last_action_in(dump_path(r));
    text +=
        str("\n  rank ", r, ": ",
            last.empty() ? "NO FLIGHT RECORD: stopped, killed or still running (suspect)" : last);
  }
  return text;
}

void install_dump_signal() {
  std::signal(SIGUSR2, on_sigusr2);
}

void poll_dump_request() {
  if (g_dump_requested == 0) return;
  g_dump_requested = 0;
  const std::string path = dump("SIGUSR2");
  std::fprintf(stderr, "flight recorder written to %s (SIGUSR2)\n",
               path.empty() ? "nowhere: run.dir is not set" : path.c_str());
  std::fflush(stderr);
}

void set_abandoning() {
  g_abandoning = true;
}
void clear_abandoning() {
  g_abandoning = false;
}
bool abandoning() {
  return g_abandoning;
}

}  // namespace triax::flight
