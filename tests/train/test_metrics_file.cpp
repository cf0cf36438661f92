#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "train/metrics_file.h"

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string metrics_path() {
  const auto dir = std::filesystem::temp_directory_path() / "triax_test_metrics_file";
  std::filesystem::create_directories(dir);
  return (dir / "metrics.jsonl").string();
}

}  // namespace

TEST_CASE("a resume drops the records of steps after the checkpoint, then appends", "[metrics]") {
  const std::string path = metrics_path();
  {
    std::ofstream out(path);
    out << "{\"step\": 1, \"loss\": 5.5}\n{\"step\": 2, \"loss\": 5.1}\n"
        << "{\"step\": 3, \"loss\": 4.9}\n{\"step\": 4, \"loss\": 4.7}\n";
  }
  {
    std::ofstream metrics = triax::open_metrics_file(path, 2);
    metrics << "{\"step\": 3, \"loss\": 4.8}\n";
  }
  CHECK(
      read_all(path) ==
      "{\"step\": 1, \"loss\": 5.5}\n{\"step\": 2, \"loss\": 5.1}\n{\"step\": 3, \"loss\": 4.8}\n");
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_CASE("a fresh run starts the metrics file empty; a resume without one creates it",
          "[metrics]") {
  const std::string path = metrics_path();
  { std::ofstream(path) << "{\"step\": 1, \"loss\": 5.5}\n"; }
  { triax::open_metrics_file(path, -1) << "{\"step\": 1, \"loss\": 6}\n"; }
  CHECK(read_all(path) == "{\"step\": 1, \"loss\": 6}\n");
  std::filesystem::remove(path);
  { triax::open_metrics_file(path, 7) << "{\"step\": 8, \"loss\": 3}\n"; }
  CHECK(read_all(path) == "{\"step\": 8, \"loss\": 3}\n");
}

TEST_CASE("an unwritable metrics path is an error naming it", "[metrics]") {
  CHECK_THROWS_WITH(triax::open_metrics_file("/nonexistent-dir/metrics.jsonl", -1),
                    Catch::Contains("/nonexistent-dir/metrics.jsonl"));
}
