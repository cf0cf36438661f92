// The `triax` executable a launcher starts: a small supervisor (no LibTorch, statically linked,
// in main() within a millisecond of exec) around `triax-core`, the real program, beside it.
//
// Why a second process:
//   - Early signals. Loading LibTorch takes ~0.3 s (seconds with 8 ranks on 2 cores), and until
//     triax-core's main() installs its handlers, SIGTERM or SIGUSR1 (a preemption notice, a
//     scancel --signal) would kill the rank with the signal's default action. The supervisor
//     blocks them at once; triax-core inherits the blocked mask across exec, installs its
//     handlers, then unblocks (job/stop_signal.h), and a signal that came meanwhile is honoured.
//     Signals sent to the supervisor are forwarded to triax-core.
//   - Naming a rank that is killed. A process killed outright (kill -9, the OOM killer, a
//     segfault) cannot say so, and mpirun's box names a PID. Its parent learns the signal:
//     "rank 3 (pid 812 on n1) was killed by signal 9 (SIGKILL)", on the terminal, before the
//     launcher ends the others; then it dies of the same signal, so the launcher reports what
//     it always did.
//   - Holding a dropped worker. An asynchronous parameter server's job goes on without a lost
//     worker (docs/parameter_server.md), but hydra and srun end the whole job as soon as a
//     process ends. So triax-core asks its supervisor to hold (job/supervisor_hold.h: the
//     pid and the signal are in TRIAX_SUPERVISOR): once triax-core is killed, the supervisor says
//     so and waits, keeping the launcher's view unchanged, until a survivor ends it when all have
//     finished (job/heartbeat.h, finish_together).
// triax-core dies with the supervisor (PR_SET_PDEATHSIG): a launcher that SIGKILLs the job
// leaves nothing behind. Exit codes pass through unchanged.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "job/supervisor_hold.h"

namespace {

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_hold = 0;

extern "C" void hold(int) {
  g_hold = 1;
}

// The signals a launcher or a user sends to end or ask a rank something; forwarded.
const int kForwarded[] = {SIGTERM, SIGUSR1, SIGUSR2, SIGINT, SIGHUP, SIGQUIT};

extern "C" void forward(int signal) {
  if (g_child > 0) ::kill(g_child, signal);
}

// The launcher's rank variable, as core/launch_env.cpp reads it ("" when none).
std::string rank_of_launch() {
  for (const char* name : {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name)) return value;
  }
  return "";
}

const char* signal_text(int signal) {
  switch (signal) {
    case SIGKILL:
      return "SIGKILL: kill -9, the OOM killer (see dmesg), or a launcher";
    case SIGSEGV:
      return "SIGSEGV: a segmentation fault (a crash)";
    case SIGBUS:
      return "SIGBUS: a bad memory access (a truncated mmapped file?)";
    case SIGABRT:
      return "SIGABRT: abort(), a failed assertion or an uncaught exception";
    case SIGFPE:
      return "SIGFPE: an arithmetic fault";
    case SIGILL:
      return "SIGILL: an illegal instruction (a CPU without an instruction used)";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP: the terminal went away";
    case SIGPIPE:
      return "SIGPIPE: a write to a closed pipe or socket";
    default:
      return strsignal(signal);
  }
}

std::string core_path(const char* self) {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  std::string exe = n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string(self);
  const size_t slash = exe.rfind('/');
  return (slash == std::string::npos ? std::string(".") : exe.substr(0, slash)) + "/triax-core";
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGUSR1);
  sigprocmask(SIG_BLOCK, &stops, nullptr);  // first: held, not lost, until triax-core takes them

  const std::string core = core_path(argv[0]);
  // Across nodes under MPICH's hydra (fewer ranks on this node than in the job), the supervisor
  // made MPI_Finalize over UCX hang and hydra then fail the finished job (about one run in two
  // on namespace nodes; also when it only held the signals and exec'd in place; not understood
  // yet). There it steps aside: triax-core runs as if started directly, so a signal in its
  // first ~0.3 s takes the default action, and a killed rank is named by the death watch's
  // run.dir/flight/died.txt rather than on the terminal.
  const char* local = std::getenv("MPI_LOCALNRANKS");
  const char* size = std::getenv("PMI_SIZE");
  if (local != nullptr && size != nullptr && std::atoi(local) < std::atoi(size)) {
    sigprocmask(SIG_UNBLOCK, &stops, nullptr);
    argv[0] = const_cast<char*>("triax");
    ::execv(core.c_str(), argv);
    std::fprintf(stderr, "triax: cannot run %s: %s\n", core.c_str(), std::strerror(errno));
    return 127;
  }
  const pid_t parent = ::getpid();
  // Before the fork: triax-core may ask to be held at any time once it runs.
  struct sigaction holding {};
  holding.sa_handler = hold;
  sigemptyset(&holding.sa_mask);
  holding.sa_flags = SA_RESTART;
  ::sigaction(triax::hold_signal(), &holding, nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "triax: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the supervisor died before prctl
    // Where to ask, and with which signal (SIGRTMIN may differ between this static program and
    // the dynamic triax-core).
    ::setenv("TRIAX_SUPERVISOR",
             (std::to_string(parent) + ":" + std::to_string(triax::hold_signal())).c_str(), 1);
    argv[0] = const_cast<char*>("triax");
    ::execv(core.c_str(), argv);
    std::fprintf(stderr, "triax: cannot run %s: %s\n", core.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  g_child = child;
  struct sigaction action {};
  action.sa_handler = forward;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int s : kForwarded) ::sigaction(s, &action, nullptr);
  sigprocmask(SIG_UNBLOCK, &stops, nullptr);

  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  g_child = 0;  // reaped: nothing to forward to (its pid may be reused)
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  const int signal = WTERMSIG(status);
  char host[256] = "?";
  ::gethostname(host, sizeof(host) - 1);
  const std::string rank = rank_of_launch();
  const std::string who = rank.empty() ? std::string("triax") : "rank " + rank;
  std::fprintf(stderr,
               "[%s] error: %s (pid %d on %s) was killed by signal %d (%s); the launcher knows "
               "it by its supervisor's pid %d\n",
               who.c_str(), who.c_str(), static_cast<int>(child), host, signal, signal_text(signal),
               static_cast<int>(::getpid()));
  std::fflush(stderr);
  if (g_hold) {
    // A dropped worker: the others go on; one of them ends this process when all have finished.
    std::fprintf(stderr,
                 "[%s] note: its supervisor (pid %d) holds on until the other ranks have finished "
                 "(an asynchronous parameter server's job goes on without a lost worker)\n",
                 who.c_str(), static_cast<int>(::getpid()));
    std::fflush(stderr);
    // A user's or scheduler's SIGTERM, SIGINT... now ends this process itself.
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    for (int s : kForwarded) ::sigaction(s, &fallback, nullptr);
    for (;;) ::pause();
  }
  // A rank often dies because another one did (MPI aborts on a vanished peer): a moment for the
  // other supervisors to say theirs before the launcher, seeing this one end, ends them all.
  ::usleep(300 * 1000);
  // Die the same way, so the launcher reports what it always did (without a core of this
  // process: the crash was triax-core's).
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  ::sigaction(signal, &fallback, nullptr);
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_UNBLOCK, &all, nullptr);
  ::raise(signal);
  return 128 + signal;
}
