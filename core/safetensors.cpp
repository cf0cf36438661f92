#include "core/safetensors.h"

#include "core/safetensors_check.h"

#include <yaml-cpp/yaml.h>

#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"

namespace triax {
namespace {

const std::vector<std::pair<torch::ScalarType, std::string>> kDtypes = {
    {torch::kFloat, "F32"},     {torch::kDouble, "F64"}, {torch::kHalf, "F16"},
    {torch::kBFloat16, "BF16"}, {torch::kLong, "I64"},   {torch::kInt, "I32"},
    {torch::kShort, "I16"},     {torch::kChar, "I8"},    {torch::kByte, "U8"},
    {torch::kBool, "BOOL"}};

std::string dtype_name(torch::ScalarType type) {
  for (const auto& [t, name] : kDtypes) {
    if (t == type) return name;
  }
  throw Error(str("safetensors: unsupported dtype ", c10::toString(type)));
}

torch::ScalarType dtype_of(const std::string& name, const std::string& path) {
  for (const auto& [t, n] : kDtypes) {
    if (n == name) return t;
  }
  throw Error(str(path, ": unsupported safetensors dtype '", name, "'"));
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

const torch::Tensor& SafetensorsFile::at(const std::string& name) const {
  for (const auto& item : tensors) {
    if (item.first == name) return item.second;
  }
  std::vector<std::string> names;
  for (const auto& item : tensors) names.push_back(item.first);
  const std::string hint = closest(name, names);
  throw Error(str("safetensors: no tensor '", name, "'",
                  hint.empty() ? "" : str(" (did you mean '", hint, "'?)")));
}

void save_safetensors(const std::string& path, const SafetensorsFile& file) {
  SafetensorsWriter out(path, file.tensors, file.metadata);
  for (const auto& [name, tensor] : file.tensors) out.write(name, tensor);
  out.commit();
}

SafetensorsWriter::SafetensorsWriter(
    const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& layout,
    const std::map<std::string, std::string>& metadata)
    : path_(path), out_(path) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      header += str(first ? "" : ",", json_string(key), ":", json_string(value));
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const auto& [name, tensor] : layout) {
    Slot slot;
    slot.offset = offset;
    slot.dtype = tensor.scalar_type();
    slot.sizes = tensor.sizes().vec();
    const uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * tensor.element_size();
    header += str(header.size() > 1 ? "," : "", json_string(name), ":{\"dtype\":\"",
                  dtype_name(slot.dtype), "\",\"shape\":[", join(slot.sizes, ","),
                  "],\"data_offsets\":[", offset, ",", offset + bytes, "]}");
    offset += bytes;
    TRIAX_CHECK(slots_.emplace(name, slot).second, path, ": tensor ", name, " listed twice");
    order_.push_back(name);
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned
  const uint64_t size = header.size();
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>(size >> (8 * i));
  out_.write(prefix, 8);
  out_.write(header.data(), header.size());
  for (auto& [name, slot] : slots_) slot.offset += 8 + size;
}

void SafetensorsWriter::write(const std::string& name, const torch::Tensor& value) {
  const auto it = slots_.find(name);
  TRIAX_CHECK(it != slots_.end(), path_, ": tensor ", name, " is not in the file's header");
  Slot& slot = it->second;
  TRIAX_CHECK(!slot.written, path_, ": tensor ", name, " written twice");
  TRIAX_CHECK(value.scalar_type() == slot.dtype && value.sizes().vec() == slot.sizes, path_,
              ": tensor ", name, " is ", value.scalar_type(), " ", value.sizes(),
              ", the header says ", slot.dtype, " ", torch::IntArrayRef(slot.sizes));
  const torch::Tensor t = value.detach().to(torch::kCPU).contiguous();
  out_.write_at(slot.offset, t.data_ptr(), static_cast<size_t>(t.numel() * t.element_size()));
  slot.written = true;
}

void SafetensorsWriter::commit() {
  for (const std::string& name : order_) {
    TRIAX_CHECK(slots_.at(name).written, path_, ": tensor ", name, " was never written");
  }
  out_.commit();
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(str(path, ": cannot open"));
  unsigned char prefix[8];
  in.read(reinterpret_cast<char*>(prefix), 8);
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t{prefix[i]} << (8 * i);
  in.seekg(0, std::ios::end);
  const int64_t file_size = in.tellg();
  if (!in || header_size > static_cast<uint64_t>(file_size) - 8) {
    throw Error(str(path, ": not a safetensors file (bad header size)"));
  }
  std::string header(header_size, '\0');
  in.seekg(8);
  in.read(header.data(), static_cast<std::streamsize>(header_size));
  const int64_t data_start = 8 + static_cast<int64_t>(header_size);

  SafetensorsFile file;
  YAML::Node root;  // JSON is YAML: yaml-cpp parses the header
  try {
    root = YAML::Load(header);
  } catch (const YAML::Exception& e) {
    throw Error(str(path, ": bad safetensors header: ", e.msg));
  }
  std::vector<std::pair<int64_t, std::pair<std::string, torch::Tensor>>> ordered;
  if (!root.IsMap()) throw Error(str(path, ": bad safetensors header: not a JSON object"));
  for (const auto& entry : root) {
    const std::string name = entry.first.Scalar();
    if (name == "__metadata__") {
      try {
        for (const auto& item : entry.second)
          file.metadata[item.first.as<std::string>()] = item.second.as<std::string>();
      } catch (const YAML::Exception&) {
        throw Error(str(path, ": __metadata__ must map strings to strings"));
      }
      continue;
    }
    const auto dtype = header_field<std::string>(entry.second, "dtype", path, name);
    const auto shape = header_field<std::vector<int64_t>>(entry.second, "shape", path, name);
    const auto offsets =
        header_field<std::vector<int64_t>>(entry.second, "data_offsets", path, name);
    const torch::ScalarType type = dtype_of(dtype, path);
    const int64_t element = static_cast<int64_t>(c10::elementSize(type));
    check_tensor_extent(path, name, dtype, shape, offsets, element, file_size - data_start);
    torch::Tensor t = torch::empty(shape, type);  // only once its size is known to be real
    const int64_t bytes = t.numel() * t.element_size();
    in.seekg(data_start + offsets[0]);
    in.read(static_cast<char*>(t.data_ptr()), bytes);
    if (!in) throw Error(str(path, ": truncated data for '", name, "'"));
    ordered.push_back({offsets[0], {name, t}});
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& item : ordered) file.tensors.push_back(std::move(item.second));
  return file;
}

}  // namespace triax
