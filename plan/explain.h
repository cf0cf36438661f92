// defines: triax::explain_row
//
// `triax plan --explain ROW`: how one row of the ranking was computed, for a human checking it —
// the layer's times (with a device: its kernels, each on the roofline, and which side bounds it),
// the pipeline's simulation, each communication, the optimizer, their sum, tokens per second and
// MFU, and every pipeline rank's memory by part against the limit.
#pragma once

#include <string>

#include "core/config.h"
#include "plan/gpu_model.h"
#include "plan/planner.h"
#include "plan/profile.h"

namespace triax {

/// Row `row` (1-based) of `plan`; `device`: the device the profile was computed for, or null.
/// Throws ConfigError naming --explain when the row does not exist.
std::string explain_row(const Config& config, const PlanRequest& request, const LayoutPlan& plan,
                        int row, const Profile& profile, const GpuModel* device);

}  // namespace triax
