// defines: triax::SafetensorsMap, triax::TensorInfo
//
// A safetensors file (format: core/safetensors.h) memory-mapped read-only: opening it reads only
// the header, and a tensor is a view of the mapped bytes, so a reader that takes one slice of a
// multi-GB file touches only that slice's pages (the page cache, not the heap, holds the rest).
// Hugging Face files come in F32, F16 and BF16: `as_float` converts one tensor at a time.
#pragma once

#include <torch/torch.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace triax {

struct TensorInfo {
  std::string dtype;  ///< as the file spells it: "F32", "BF16", ...
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;  ///< byte offsets in the data section
};

class SafetensorsMap {
 public:
  /// Maps `path`; throws Error naming the file when it is not a consistent safetensors file.
  explicit SafetensorsMap(const std::string& path);
  ~SafetensorsMap();
  SafetensorsMap(const SafetensorsMap&) = delete;
  SafetensorsMap& operator=(const SafetensorsMap&) = delete;

  const std::string& path() const { return path_; }
  /// Tensor names in file order (by offset).
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  /// Throws Error naming the file and the closest name when absent.
  const TensorInfo& info(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The tensor in its own dtype: a read-only view of the mapping (valid while this object is).
  torch::Tensor view(const std::string& name) const;
  /// The tensor as fp32: the view itself for F32, a converted copy for F16 / BF16 (exact).
  torch::Tensor as_float(const std::string& name) const;
  /// Drops the tensor's pages from this process's resident set (they stay in the page cache):
  /// a reader that is done with a tensor keeps its memory at what it still holds. Views of the
  /// tensor stay valid (the pages are read back when touched).
  void release(const std::string& name) const;

 private:
  std::string path_;
  void* data_ = nullptr;
  size_t size_ = 0;
  int64_t data_start_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace triax
