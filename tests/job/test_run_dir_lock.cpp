// job/run_dir_lock.h in one process (flock locks belong to open files, so two opens here behave
// as two jobs): a free folder passes, a held one is refused naming the holder, and the lock goes
// with its holder. The two-job run is cli_run_dir_in_use.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "core/strings.h"
#include "job/run_dir_lock.h"

using namespace triax;

TEST_CASE("a run.dir lock refuses a second holder and goes with the first", "[run_dir_lock]") {
  const auto dir = std::filesystem::temp_directory_path() / "triax_run_dir_lock";
  std::filesystem::create_directories(dir);
  const std::string lock = (dir / ".triax.lock").string();
  CHECK_NOTHROW(check_run_dir_free(lock));
  CHECK_NOTHROW(check_run_dir_free(""));  // no run.dir: nothing to lock
  {
    const RunDirLock held(lock);
    const std::string holder = str("pid ", ::getpid(), " on ");
    CHECK_THROWS_WITH(check_run_dir_free(lock),
                      Catch::Contains("is in use by a running job (" + holder) &&
                          Catch::Contains("valid: another run.dir"));
    CHECK_THROWS_AS(RunDirLock(lock), ConfigError);
  }
  CHECK_NOTHROW(check_run_dir_free(lock));
  CHECK_NOTHROW(RunDirLock(lock));  // free again once the holder is gone
  std::filesystem::remove_all(dir);
}
