#include "parallel/ps/server_shards.h"

#include <cmath>

#include "core/error.h"

namespace triax {

std::vector<int> assign_servers(const std::vector<int64_t>& bytes, int servers) {
  const int64_t n = static_cast<int64_t>(bytes.size());
  TRIAX_CHECK(servers >= 1 && servers <= n, "assign_servers: ", servers, " servers for ", n,
              " parameters");
  std::vector<int64_t> prefix(static_cast<size_t>(n) + 1, 0);
  for (int64_t k = 0; k < n; ++k) {
    prefix[static_cast<size_t>(k) + 1] =
        prefix[static_cast<size_t>(k)] + bytes[static_cast<size_t>(k)];
  }
  const double total = static_cast<double>(prefix.back());
  std::vector<int> out(static_cast<size_t>(n), 0);
  int64_t begin = 0;
  for (int s = 0; s < servers; ++s) {
    int64_t end = n;
    if (s + 1 < servers) {
      // The cut nearest s+1 equal shares, leaving at least one parameter to each server.
      const double target = total * (s + 1) / servers;
      end = begin + 1;
      const int64_t last = n - (servers - s - 1);
      while (end < last &&
             std::abs(static_cast<double>(prefix[static_cast<size_t>(end) + 1]) - target) <
                 std::abs(static_cast<double>(prefix[static_cast<size_t>(end)]) - target)) {
        ++end;
      }
    }
    for (int64_t k = begin; k < end; ++k) out[static_cast<size_t>(k)] = s;
    begin = end;
  }
  return out;
}

}  // namespace triax
