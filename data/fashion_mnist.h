// defines: triax::FashionMnist, triax::load_fashion_mnist
//
// Reads the gzip IDX files of Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz).
// IDX: a big-endian header (magic 0x00000803 for images, 0x00000801 for labels, then the
// dimensions), then the raw uint8 values.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace triax {

struct FashionMnist {
  torch::Tensor
      pixels;  ///< [N, 784] uint8, kept compact (8 ranks x 60000 images as float is 1.5 GB)
  torch::Tensor labels;  ///< [N] int64 in [0, 10)
  int64_t size() const { return labels.size(0); }
  /// The images at `index` ([B] int64) as float32 [B, 784], normalised with the training set's
  /// pixel mean and std.
  torch::Tensor images(const torch::Tensor& index) const;
};

/// Throws the same ConfigError as load_fashion_mnist when a file of either split is missing; cheap
/// enough to run on every rank before any communication exists.
void check_fashion_mnist_files(const std::string& dir);

/// Loads the "train" (60000) or "t10k" (10000) split from `dir`, keeping the first `max_samples`
/// (0 = all). Throws ConfigError naming the missing file and how to install it.
FashionMnist load_fashion_mnist(const std::string& dir, const std::string& split,
                                int64_t max_samples = 0);

}  // namespace triax
