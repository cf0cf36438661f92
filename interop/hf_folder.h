// defines: triax::HfFolder
//
// A Hugging Face model folder's weights: model.safetensors, or the shards that
// model.safetensors.index.json lists, memory-mapped and found by tensor name.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/safetensors_map.h"

namespace triax {

/// The safetensors files of a Hugging Face folder, mapped, by tensor name.
class HfFolder {
 public:
  /// Throws ConfigError naming the folder when it has neither model.safetensors nor an index,
  /// or the index names a file that is missing or lacks the tensor.
  explicit HfFolder(const std::string& dir);
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const { return files_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;
  /// fp32 (a view of the mapping for F32 tensors).
  torch::Tensor as_float(const std::string& name) const;
  /// Lets go of the tensor's mapped pages (SafetensorsMap::release).
  void release(const std::string& name) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::map<std::string, std::shared_ptr<SafetensorsMap>> files_;  ///< tensor -> its file
};

}  // namespace triax
