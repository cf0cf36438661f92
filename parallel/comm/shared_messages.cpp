#include "parallel/comm/shared_messages.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>

namespace triax {
namespace {

std::string segment_name(uint64_t nonce) {
  char name[40];
  std::snprintf(name, sizeof name, "/triax-relayout-%016llx",
                static_cast<unsigned long long>(nonce));
  return name;
}

// A mapping of one segment, unmapped when the last tensor over it goes.
struct Mapping {
  void* at = MAP_FAILED;
  size_t bytes = 0;
  ~Mapping() {
    if (at != MAP_FAILED) munmap(at, bytes);
  }
};

// Unlinks this rank's segment name when it goes (at the latest on an error between its creation
// and the all-gather's end), only if this rank created it.
struct OwnName {
  std::string name;
  bool created = false;
  ~OwnName() {
    if (created) shm_unlink(name.c_str());
  }
};

// This rank's segment, created and filled; null if shared memory would not take it.
std::shared_ptr<Mapping> create_segment(OwnName& owned, int64_t bytes,
                                        const std::function<void(uint8_t*)>& write) {
  const int fd = shm_open(owned.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return nullptr;
  owned.created = true;
  auto mapping = std::make_shared<Mapping>();
  mapping->bytes = static_cast<size_t>(bytes);
  // Space reserved before writing: a full /dev/shm then refuses here, rather than by a SIGBUS on
  // the first store to a page it cannot back.
  if (posix_fallocate(fd, 0, bytes) == 0) {
    mapping->at = mmap(nullptr, mapping->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  close(fd);
  if (mapping->at == MAP_FAILED) return nullptr;
  write(static_cast<uint8_t*>(mapping->at));
  // Read-only from here, as the others map it: a write into the gathered state would otherwise
  // change, unseen, what every other rank reads.
  if (mprotect(mapping->at, mapping->bytes, PROT_READ) != 0) return nullptr;
  return mapping;
}

// Another rank's segment, mapped read-only; null if it is not here (another node).
std::shared_ptr<Mapping> map_segment(const std::string& name, int64_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0) return nullptr;
  struct stat info {};
  auto mapping = std::make_shared<Mapping>();
  mapping->bytes = static_cast<size_t>(bytes);
  if (fstat(fd, &info) == 0 && info.st_size == bytes) {
    mapping->at = mmap(nullptr, mapping->bytes, PROT_READ, MAP_SHARED, fd, 0);
  }
  close(fd);
  return mapping->at == MAP_FAILED ? nullptr : mapping;
}

}  // namespace

std::optional<std::vector<torch::Tensor>> share_messages(
    Communicator& world, int64_t bytes, const std::function<void(uint8_t*)>& write) {
  const int n = world.size();
  std::shared_ptr<Mapping> mine;
  uint64_t nonce = 0;
  OwnName owned;
  if (bytes > 0) {
    // A failure here is this rank's alone: it posts -1 and every rank sends instead (a throw
    // would leave the others waiting in the all-gather).
    try {
      std::random_device random;
      nonce = (static_cast<uint64_t>(random()) << 32) ^ random();
      owned.name = segment_name(nonce);
      mine = create_segment(owned, bytes, write);
    } catch (const std::exception&) {
      mine.reset();
    }
  }
  // Each rank's (nonce, bytes), -1 bytes where it could not create its segment; after the
  // all-gather every segment is written.
  const torch::Tensor posted = torch::tensor(
      {static_cast<int64_t>(nonce), bytes > 0 && !mine ? int64_t{-1} : bytes}, torch::kLong);
  const torch::Tensor all = world.all_gather(posted.view({1, 2}));
  std::vector<std::shared_ptr<Mapping>> mapped(static_cast<size_t>(n));
  bool ok = true;
  for (int r = 0; r < n && ok; ++r) {
    const int64_t size = all[r][1].item<int64_t>();
    ok = size >= 0;
    if (size <= 0) continue;
    mapped[static_cast<size_t>(r)] =
        r == world.rank()
            ? mine
            : map_segment(segment_name(static_cast<uint64_t>(all[r][0].item<int64_t>())), size);
    ok = mapped[static_cast<size_t>(r)] != nullptr;
  }
  torch::Tensor verdict = torch::tensor({ok ? 1.0 : 0.0}, torch::kDouble);
  world.all_reduce(verdict, ReduceOp::kMin);
  // Every rank has mapped every segment (or given up): the names can go, the pages stay while
  // mapped.
  if (owned.created) shm_unlink(owned.name.c_str());
  owned.created = false;
  if (verdict.item<double>() < 1.0) return std::nullopt;
  std::vector<torch::Tensor> out(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const std::shared_ptr<Mapping>& mapping = mapped[static_cast<size_t>(r)];
    if (!mapping) continue;
    out[static_cast<size_t>(r)] = torch::from_blob(
        mapping->at, {static_cast<int64_t>(mapping->bytes)}, [mapping](void*) {},
        torch::TensorOptions().dtype(torch::kByte));
  }
  return out;
}

}  // namespace triax
