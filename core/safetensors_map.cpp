#include "core/safetensors_map.h"

#include "core/safetensors_check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

torch::ScalarType scalar_type(const std::string& dtype, const std::string& path) {
  static const std::map<std::string, torch::ScalarType> kTypes = {
      {"F32", torch::kFloat},  {"F16", torch::kHalf}, {"BF16", torch::kBFloat16},
      {"F64", torch::kDouble}, {"I64", torch::kLong}, {"I32", torch::kInt},
      {"I16", torch::kShort},  {"I8", torch::kChar},  {"U8", torch::kByte},
      {"BOOL", torch::kBool}};
  const auto it = kTypes.find(dtype);
  if (it == kTypes.end()) throw Error(str(path, ": unsupported safetensors dtype '", dtype, "'"));
  return it->second;
}

}  // namespace

SafetensorsMap::SafetensorsMap(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(str(path, ": cannot open (", std::strerror(errno), ")"));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 8) {
    ::close(fd);
    throw Error(str(path, ": not a safetensors file (shorter than its 8-byte header size)"));
  }
  size_ = static_cast<size_t>(st.st_size);
  data_ = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw Error(str(path, ": cannot map (", std::strerror(errno), ")"));
  }
  // A refused header must not leak the mapping (the destructor of a throwing constructor does
  // not run).
  struct Unmap {
    void*& data;
    size_t size;
    bool armed = true;
    ~Unmap() {
      if (armed) {
        ::munmap(data, size);
        data = nullptr;
      }
    }
  } unmap_on_throw{data_, size_};
  const auto* bytes = static_cast<const unsigned char*>(data_);
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t{bytes[i]} << (8 * i);
  if (header_size > size_ - 8) {
    throw Error(str(path, ": not a safetensors file (header size ", header_size, " > file)"));
  }
  data_start_ = 8 + static_cast<int64_t>(header_size);
  YAML::Node root;  // JSON is YAML
  try {
    root = YAML::Load(std::string(reinterpret_cast<const char*>(bytes + 8), header_size));
  } catch (const YAML::Exception& e) {
    throw Error(str(path, ": bad safetensors header: ", e.msg));
  }
  if (!root.IsMap()) throw Error(str(path, ": bad safetensors header: not a JSON object"));
  for (const auto& entry : root) {
    const std::string name = entry.first.Scalar();
    if (name == "__metadata__") {
      try {
        for (const auto& item : entry.second)
          metadata_[item.first.as<std::string>()] = item.second.as<std::string>();
      } catch (const YAML::Exception&) {
        throw Error(str(path, ": __metadata__ must map strings to strings"));
      }
      continue;
    }
    TensorInfo info;
    info.dtype = header_field<std::string>(entry.second, "dtype", path, name);
    info.shape = header_field<std::vector<int64_t>>(entry.second, "shape", path, name);
    const auto offsets =
        header_field<std::vector<int64_t>>(entry.second, "data_offsets", path, name);
    check_tensor_extent(path, name, info.dtype, info.shape, offsets,
                        static_cast<int64_t>(c10::elementSize(scalar_type(info.dtype, path))),
                        static_cast<int64_t>(size_) - data_start_);
    info.begin = offsets[0];
    info.end = offsets[1];
    tensors_[name] = info;
  }
  unmap_on_throw.armed = false;
}

SafetensorsMap::~SafetensorsMap() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

std::vector<std::string> SafetensorsMap::names() const {
  std::vector<std::pair<int64_t, std::string>> ordered;
  for (const auto& [name, info] : tensors_) ordered.emplace_back(info.begin, name);
  std::sort(ordered.begin(), ordered.end());
  std::vector<std::string> out;
  for (auto& item : ordered) out.push_back(item.second);
  return out;
}

const TensorInfo& SafetensorsMap::info(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it != tensors_.end()) return it->second;
  const std::string hint = closest(name, names());
  throw Error(str(path_, ": no tensor '", name, "'",
                  hint.empty() ? "" : str(" (did you mean '", hint, "'?)")));
}

torch::Tensor SafetensorsMap::view(const std::string& name) const {
  const TensorInfo& i = info(name);
  auto* start = static_cast<unsigned char*>(data_) + data_start_ + i.begin;
  // Read-only pages: callers copy (shard_of, .to, clone) before anything writes.
  return torch::from_blob(start, i.shape, torch::TensorOptions(scalar_type(i.dtype, path_)));
}

void SafetensorsMap::release(const std::string& name) const {
  const TensorInfo& i = info(name);
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  // Whole pages inside the tensor only: a neighbour's pages stay.
  const size_t begin = static_cast<size_t>(data_start_ + i.begin);
  const size_t first = (begin + page - 1) / page * page;
  const size_t last = static_cast<size_t>(data_start_ + i.end) / page * page;
  if (last > first) ::madvise(static_cast<char*>(data_) + first, last - first, MADV_DONTNEED);
}

torch::Tensor SafetensorsMap::as_float(const std::string& name) const {
  const TensorInfo& i = info(name);
  if (i.dtype != "F32" && i.dtype != "F16" && i.dtype != "BF16") {
    throw Error(
        str(path_, ": tensor '", name, "' is ", i.dtype, " (valid for weights: F32, F16, BF16)"));
  }
  const torch::Tensor t = view(name);
  return i.dtype == "F32" ? t : t.to(torch::kFloat);
}

}  // namespace triax
