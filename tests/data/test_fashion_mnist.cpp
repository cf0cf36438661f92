#include <catch2/catch.hpp>

#include <filesystem>

#include "core/error.h"
#include "data/fashion_mnist.h"

namespace {
const char* kDir = "/usr/share/datasets/fashion-mnist";
}

TEST_CASE("Fashion-MNIST loads from Debian's package", "[data]") {
  if (!std::filesystem::exists(std::string(kDir) + "/t10k-labels-idx1-ubyte.gz")) {
    WARN("SKIPPED: " << kDir << " is missing (apt-get install dataset-fashion-mnist)");
    return;
  }
  const auto test = triax::load_fashion_mnist(kDir, "t10k");
  CHECK(test.size() == 10000);
  CHECK(test.pixels.sizes() == torch::IntArrayRef({10000, 784}));
  // Ten balanced classes of 1000 test images each.
  CHECK(torch::bincount(test.labels).eq(1000).all().item<bool>());
  const auto few = triax::load_fashion_mnist(kDir, "train", 100);
  CHECK(few.size() == 100);
  const torch::Tensor images = few.images(torch::arange(100));
  CHECK(images.dtype() == torch::kFloat32);
  CHECK(images.mean().item<double>() == Approx(0.0).margin(0.3));  // normalised
}

TEST_CASE("a missing dataset says how to install it", "[data]") {
  CHECK_THROWS_WITH(
      triax::load_fashion_mnist("/nonexistent", "train"),
      Catch::Contains("apt-get install dataset-fashion-mnist") && Catch::Contains("data.dir"));
}
