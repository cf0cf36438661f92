// defines: triax::check_tensor_extent, triax::header_field
//
// A safetensors header is outside bytes: well-formed JSON with a matching checksum can still
// describe impossible tensors (a negative or overflowing dimension, offsets outside the file).
// Both readers (core/safetensors.h, core/safetensors_map.h) check every entry here before they
// allocate or map anything, and every refusal names the file, the tensor and what is wrong.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/strings.h"

namespace triax {

/// Throws Error("PATH: tensor 'NAME' ...") unless every dimension is >= 0, the element count and
/// byte size fit in 64 bits, and `offsets` is [begin, end] with 0 <= begin <= end <= data_bytes
/// (the bytes after the header) and end - begin the tensor's size.
void check_tensor_extent(const std::string& path, const std::string& name, const std::string& dtype,
                         const std::vector<int64_t>& shape, const std::vector<int64_t>& offsets,
                         int64_t element_size, int64_t data_bytes);

/// `entry[key]` as T, or Error naming the file, the tensor and the key (missing, or not a T).
template <class T>
T header_field(const YAML::Node& entry, const char* key, const std::string& path,
               const std::string& name) {
  try {
    if (!entry.IsMap() || !entry[key]) {
      throw Error(str(path, ": tensor '", name, "' has no \"", key, "\" in the header"));
    }
    return entry[key].as<T>();
  } catch (const YAML::Exception&) {
    throw Error(str(path, ": tensor '", name, "': \"", key,
                    "\" is not what safetensors puts there"
                    " (dtype: a string; shape, data_offsets: lists of integers)"));
  }
}

}  // namespace triax
