// defines: triax::save_safetensors, triax::load_safetensors, triax::SafetensorsFile,
//          triax::SafetensorsWriter
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

#include "core/atomic_file.h"

namespace triax {

struct SafetensorsFile {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;  ///< in file order
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`; throws naming the file's tensors when absent.
  const torch::Tensor& at(const std::string& name) const;
};

void save_safetensors(const std::string& path, const SafetensorsFile& file);
SafetensorsFile load_safetensors(const std::string& path);

/// A safetensors file written in pieces: the header from every tensor's name, dtype and shape
/// (file order), then each tensor's bytes whenever they are at hand, in any order (a checkpoint
/// gathers a sharded optimizer's state one bucket at a time, so no process holds it all).
/// Atomic as save_safetensors, and the same bytes for the same tensors.
class SafetensorsWriter {
 public:
  /// `layout`: each tensor's name and a tensor of its dtype and shape (its data is not read: a
  /// tensor on the meta device will do).
  SafetensorsWriter(const std::string& path,
                    const std::vector<std::pair<std::string, torch::Tensor>>& layout,
                    const std::map<std::string, std::string>& metadata);
  /// `value` (of the declared dtype and shape) as tensor `name`; throws naming the tensor when it
  /// is not in the layout, differs from it, or was written already.
  void write(const std::string& name, const torch::Tensor& value);
  /// Throws naming the first tensor never written; else syncs and renames into place.
  void commit();

 private:
  struct Slot {
    uint64_t offset = 0;  ///< from the start of the file
    torch::ScalarType dtype = torch::kFloat;
    std::vector<int64_t> sizes;
    bool written = false;
  };
  std::string path_;
  AtomicFile out_;
  std::vector<std::string> order_;
  std::map<std::string, Slot> slots_;
};

}  // namespace triax
