#include "core/safetensors_check.h"

namespace triax {

void check_tensor_extent(const std::string& path, const std::string& name, const std::string& dtype,
                         const std::vector<int64_t>& shape, const std::vector<int64_t>& offsets,
                         int64_t element_size, int64_t data_bytes) {
  const std::string what = str(path, ": tensor '", name, "' (", dtype, " [", join(shape, ","),
                               "], data_offsets [", join(offsets, ","), "])");
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(str(what, " has a negative dimension"));
    if (__builtin_mul_overflow(numel, d, &numel)) {
      throw Error(str(what, " has more elements than 64 bits count"));
    }
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(numel, element_size, &bytes)) {
    throw Error(str(what, " has more bytes than 64 bits count"));
  }
  if (offsets.size() != 2) throw Error(str(what, ": data_offsets must be [begin, end]"));
  if (offsets[0] < 0 || offsets[1] < offsets[0] || offsets[1] > data_bytes) {
    throw Error(str(what, " lies outside the file's ", data_bytes, " data bytes"));
  }
  if (offsets[1] - offsets[0] != bytes) {
    throw Error(str(what, " spans ", offsets[1] - offsets[0], " bytes for a tensor of ", bytes));
  }
}

}  // namespace triax
