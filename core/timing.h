// defines: triax::SteadyClock, triax::seconds_since, triax::median
//
// The two things every measurement here needs: seconds on the steady clock since a point, and
// the median of a sample (this machine is noisy: medians, not means, are what benchmarks and
// `triax calibrate` report).
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace triax {

using SteadyClock = std::chrono::steady_clock;

inline double seconds_since(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

/// The upper median (the middle element of an odd sample); 0 for an empty one.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace triax
