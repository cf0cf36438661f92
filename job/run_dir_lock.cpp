#include "job/run_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "core/strings.h"

namespace triax {
namespace {

std::string holder(int fd) {
  char text[256] = {};
  const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
  std::string who = n > 0 ? std::string(text, static_cast<size_t>(n)) : "";
  while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
  return who.empty() ? "another job" : who;
}

[[noreturn]] void refuse(const std::string& lock_path, int fd) {
  const std::string dir = std::filesystem::path(lock_path).parent_path().string();
  const std::string who = holder(fd);
  ::close(fd);
  throw ConfigError(str("run.dir: ", dir, " is in use by a running job (", who,
                        "): its metrics, flight records and checkpoints would mix with this "
                        "run's (valid: another run.dir, or wait until that job ends)"));
}

int open_lock(const std::string& lock_path) {
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw ConfigError(str("run.dir: cannot open ", lock_path, " (", std::strerror(errno), ")"));
  }
  return fd;
}

// Whether flock(fd, how | LOCK_NB) failed because another holder has the lock. Any other
// failure (a file system without locks: ENOLCK) says nothing about other jobs: the run goes on
// unprotected, with a note, rather than being refused for a job that does not exist.
bool held_elsewhere(int fd, int how, const std::string& lock_path) {
  if (::flock(fd, how | LOCK_NB) == 0) return false;
  if (errno == EWOULDBLOCK) return true;
  log::warn(str("run.dir: cannot lock ", lock_path, " (", std::strerror(errno),
                "): a second job on this run.dir would not be refused"));
  return false;
}

}  // namespace

void check_run_dir_free(const std::string& lock_path) {
  if (lock_path.empty()) return;
  const int fd = open_lock(lock_path);
  // Shared: the ranks of one job test at once without excluding each other; only a running
  // job's exclusive lock makes the test fail.
  if (held_elsewhere(fd, LOCK_SH, lock_path)) refuse(lock_path, fd);
  ::close(fd);  // drops the shared lock, if it was taken
}

RunDirLock::RunDirLock(const std::string& lock_path) {
  if (lock_path.empty()) return;
  fd_ = open_lock(lock_path);
  if (held_elsewhere(fd_, LOCK_EX, lock_path)) {
    const int fd = fd_;
    fd_ = -1;
    refuse(lock_path, fd);
  }
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::time_t now = std::time(nullptr);
  char when[64] = {};
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  const std::string who = str("pid ", ::getpid(), " on ", host, " since ", when, "\n");
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd_, who.data(), who.size(), 0);
  }
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the lock
}

RunDirLock::RunDirLock(RunDirLock&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

RunDirLock& RunDirLock::operator=(RunDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

}  // namespace triax
