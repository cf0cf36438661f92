#include "job/death_watch.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <string>

namespace triax {
namespace {

int g_pipe = -1;

// Blocks until the rank writes "d" (done: recorded as ended/done_R) or its end of the pipe closes
// (it died); on a death records the time, gives the other ranks' watchers 2 s, and names the rank
// that ended first. Ranks of run.dir/ranks.txt that left neither record vanished with their
// watchers — a whole node lost — and are named first.
// It ignores the signals a launcher forwards to the job's processes (Slurm signals every process
// of a step, not only the ranks): only the pipe decides.
// Arguments: $1 the marks folder (RunPaths::ended_dir; rank_R and done_R are its marks), $2 the
// rank, $3 its pid, $4 died.txt, $5 the rank table (job/rank_table.h: "RANK HOST PID" lines).
const char* kScript = R"sh(
trap '' TERM USR1 USR2 INT HUP
b=$(head -c1)
mkdir -p "$1"
[ "$b" = d ] && { : > "$1/done_$2"; exit 0; }
t=$(date +%s.%N)
echo "$t" > "$1/rank_$2"
sleep 2
first=$(for f in "$1"/rank_*; do echo "$(cat "$f") ${f##*_}"; done | sort -n | head -1)
[ "${first#* }" = "$2" ] || exit 0
lost=
if [ -f "$5" ]; then
  while read -r r h p; do
    [ -e "$1/rank_$r" ] || [ -e "$1/done_$r" ] || lost="$lost, rank $r on $h"
  done < "$5"
fi
if [ -n "$lost" ]; then
  echo "lost without a trace (every process of theirs ended at once, watchers included: a node that died?): ${lost#, }; then rank $2 (pid $3 on $(hostname)) ended first of the others, at $t (Unix time), as the launcher ended them" > "$4"
else
  echo "rank $2 (pid $3 on $(hostname)) ended first, without a word, at $t (Unix time); the launcher ended the other ranks after it" > "$4"
fi
)sh";

}  // namespace

void start_death_watch(int rank, const RunPaths& paths) {
  if (!paths.enabled() || g_pipe >= 0) return;
  const std::string ended = paths.ended_dir(), died = paths.died(), table = paths.rank_table();
  int fds[2];
  if (::pipe(fds) != 0) return;  // best effort: the watcher is a diagnostic
  const std::string rank_text = std::to_string(rank);
  const std::string pid_text = std::to_string(::getpid());
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (child == 0) {
    // Only async-signal-safe calls until exec: this process may have threads.
    ::setsid();  // out of the job's process group: the launcher's cleanup does not kill it
    ::dup2(fds[0], 0);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);  // nothing of the job (PMI socket, pipes)
    ::execl("/bin/sh", "sh", "-c", kScript, "triax-death-watch", ended.c_str(), rank_text.c_str(),
            pid_text.c_str(), died.c_str(), table.c_str(), static_cast<char*>(nullptr));
    ::_exit(0);
  }
  ::close(fds[0]);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  g_pipe = fds[1];
}

void death_watch_done() {
  if (g_pipe < 0) return;
  // A watcher that is gone anyway must not take this rank with it (SIGPIPE).
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  const char done = 'd';
  [[maybe_unused]] const ssize_t n = ::write(g_pipe, &done, 1);
  ::close(g_pipe);
  ::sigaction(SIGPIPE, &previous, nullptr);
  g_pipe = -1;
}

}  // namespace triax
