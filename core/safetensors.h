// defines: triax::save_safetensors, triax::load_safetensors, triax::SafetensorsFile
//
// triax's weight exchange format is safetensors (https://github.com/huggingface/safetensors),
// chosen because it is documented, trivial to read without any library (the PyTorch reference
// script parses it with struct + json), and safe (no code execution on load):
//   [8 bytes: little-endian u64 N][N bytes: JSON header][raw tensor bytes]
//   header: {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//            "__metadata__": {"key": "string value", ...}}
// Offsets are relative to the start of the data section; tensors are row-major, little-endian.
// Writes are atomic: a temporary file is written, fsync'ed and renamed over the target.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace triax {

struct SafetensorsFile {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  ///< in file order
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`; throws naming the file's tensors when absent.
  const torch::Tensor& at(const std::string& name) const;
};

void save_safetensors(const std::string& path, const SafetensorsFile& file);
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace triax
