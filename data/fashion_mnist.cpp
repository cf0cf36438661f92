#include "data/fashion_mnist.h"

#include <zlib.h>

#include <array>
#include <memory>

#include "core/error.h"

namespace triax {
namespace {

// Fashion-MNIST training-set pixel statistics (of values scaled to [0, 1]).
constexpr double kPixelMean = 0.2860;
constexpr double kPixelStd = 0.3530;

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

class IdxReader {
 public:
  IdxReader(const std::string& path, const std::string& dir) : path_(path) {
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) {
      throw ConfigError(str("data.dir: cannot read Fashion-MNIST file ", path,
                            " (install it with `apt-get install dataset-fashion-mnist`, or point "
                            "data.dir at a folder holding the gzip IDX files; data.dir is '",
                            dir, "')"));
    }
  }

  uint32_t read_u32() {
    std::array<unsigned char, 4> bytes{};
    read_bytes(bytes.data(), 4);
    return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
           uint32_t{bytes[3]};
  }

  void read_bytes(void* out, int64_t count) {
    auto* cursor = static_cast<unsigned char*>(out);
    while (count > 0) {
      const unsigned chunk = static_cast<unsigned>(std::min<int64_t>(count, 1 << 30));
      const int got = gzread(file_.get(), cursor, chunk);
      if (got <= 0) throw Error(str(path_, ": truncated or corrupt IDX file"));
      cursor += got;
      count -= got;
    }
  }

  void expect_magic(uint32_t magic) {
    const uint32_t got = read_u32();
    if (got != magic) {
      throw Error(str(path_, ": not an IDX file of the expected kind (magic ", got, ", expected ",
                      magic, ")"));
    }
  }

 private:
  std::string path_;
  GzFile file_;
};

}  // namespace

torch::Tensor FashionMnist::images(const torch::Tensor& index) const {
  return (pixels.index_select(0, index).to(torch::kFloat32) / 255.0 - kPixelMean) / kPixelStd;
}

void check_fashion_mnist_files(const std::string& dir) {
  for (const char* split : {"train", "t10k"}) {
    IdxReader images(str(dir, "/", split, "-images-idx3-ubyte.gz"), dir);
    IdxReader labels(str(dir, "/", split, "-labels-idx1-ubyte.gz"), dir);
  }
}

FashionMnist load_fashion_mnist(const std::string& dir, const std::string& split,
                                int64_t max_samples) {
  TRIAX_CHECK(split == "train" || split == "t10k", "unknown split '", split, "'");
  IdxReader images(str(dir, "/", split, "-images-idx3-ubyte.gz"), dir);
  IdxReader labels(str(dir, "/", split, "-labels-idx1-ubyte.gz"), dir);
  images.expect_magic(0x00000803);
  labels.expect_magic(0x00000801);
  const int64_t count = images.read_u32();
  const int64_t rows = images.read_u32();
  const int64_t cols = images.read_u32();
  const int64_t label_count = labels.read_u32();
  TRIAX_CHECK(count == label_count, dir, "/", split, ": ", count, " images but ", label_count,
              " labels");
  const int64_t n = max_samples > 0 ? std::min(max_samples, count) : count;

  torch::Tensor pixels = torch::empty({n, rows * cols}, torch::kUInt8);
  images.read_bytes(pixels.data_ptr<uint8_t>(), n * rows * cols);
  torch::Tensor label_bytes = torch::empty({n}, torch::kUInt8);
  labels.read_bytes(label_bytes.data_ptr<uint8_t>(), n);

  FashionMnist data;
  data.pixels = pixels;
  data.labels = label_bytes.to(torch::kLong);
  TRIAX_CHECK(data.labels.max().item<int64_t>() < 10, "labels out of range in ", dir);
  return data;
}

}  // namespace triax
