#include "plan/gpu_model.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>

#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kT = 1e12, kG = 1e9;

// Datasheet memory sizes ("80 GB") are what nvidia-smi shows as that many GiB.
GpuModel preset(const char* name, const char* source, double bf16_tflops, double fp32_tflops,
                double memory_gib, double bandwidth_gbs, double node_gbs, double net_gbs) {
  GpuModel d;
  d.name = name;
  d.source = source;
  d.bf16_flops = bf16_tflops * kT;
  d.fp32_flops = fp32_tflops * kT;
  d.memory_bytes = memory_gib * kGiB;
  d.memory_bandwidth = bandwidth_gbs * kG;
  d.node_bandwidth = node_gbs * kG;
  d.net_bandwidth = net_gbs * kG;
  return d;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

double GpuModel::reserve() const {
  return reserve_bytes >= 0 ? reserve_bytes : 2 * kGiB + 0.05 * memory_bytes;
}

std::string GpuModel::describe() const {
  return str(name, ": ", std::lround(bf16_flops / kT), " TFLOP/s bf16, ",
             std::lround(fp32_flops / kT), " fp32, ", std::lround(memory_bytes / kGiB), " GiB at ",
             std::lround(memory_bandwidth / kG), " GB/s, ", std::lround(node_bandwidth / kG),
             " GB/s to its node, ", std::lround(net_bandwidth / kG), " GB/s across nodes, ",
             gpus_per_node, " per node");
}

const std::vector<GpuModel>& gpu_presets() {
  // Per GPU. Links per direction: NVLink's datasheet figure is both directions together;
  // the network is the node's compute NICs over its GPUs (one NIC per GPU in DGX/HGX nodes).
  static const std::vector<GpuModel> presets = {
      preset("a100-40gb",
             "NVIDIA A100 Tensor Core GPU datasheet (SXM4 40GB: 312 TFLOP/s bf16 dense, 19.5 fp32, "
             "1,555 GB/s, NVLink 600 GB/s); DGX A100: 8 x 200 Gb/s HDR InfiniBand",
             312, 19.5, 40, 1555, 300, 25),
      preset("a100-80gb",
             "NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB: 312 TFLOP/s bf16 dense, 19.5 fp32, "
             "2,039 GB/s, NVLink 600 GB/s); DGX A100: 8 x 200 Gb/s HDR InfiniBand",
             312, 19.5, 80, 2039, 300, 25),
      preset("h100",
             "NVIDIA H100 Tensor Core GPU datasheet (SXM5: 989 TFLOP/s bf16 dense, 67 fp32, "
             "80 GB HBM3 at 3.35 TB/s, NVLink 900 GB/s); DGX H100: 8 x 400 Gb/s ConnectX-7",
             989.4, 66.9, 80, 3350, 450, 50),
      preset("h200",
             "NVIDIA H200 Tensor Core GPU datasheet (SXM: 989 TFLOP/s bf16 dense, 67 fp32, 141 GB "
             "HBM3e at 4.8 TB/s, NVLink 900 GB/s); DGX H200: 8 x 400 Gb/s ConnectX-7",
             989.4, 66.9, 141, 4800, 450, 50),
      preset("b200",
             "NVIDIA DGX B200 / HGX B200 datasheets (per GPU: 2.25 PFLOP/s bf16 dense, 75 fp32, "
             "180 GB HBM3e at 7.7 TB/s, NVLink 5 1.8 TB/s); 8 x 400 Gb/s ConnectX-7",
             2250, 75, 180, 7700, 900, 50),
  };
  return presets;
}

GpuModel find_gpu(const std::string& name) {
  const std::string key = lower(name);
  const std::string wanted = key == "a100" ? "a100-80gb" : key == "h100-sxm" ? "h100" : key;
  for (const GpuModel& d : gpu_presets()) {
    if (d.name == wanted) return d;
  }
  if (std::ifstream(name).good()) return GpuModel::read(name);
  std::vector<std::string> names;
  for (const GpuModel& d : gpu_presets()) names.push_back(d.name);
  throw ConfigError(str("--device ", name, ": no such device preset or file (valid: ",
                        join(names, ", "), ", or a device YAML file; see docs/plan.md)"));
}

GpuModel GpuModel::read(const std::string& path) {
  const auto fail = [&](const std::string& what) -> void {
    throw ConfigError(str(path, ": ", what,
                          " (valid: a device file with bf16_tflops, fp32_tflops, memory_gib, "
                          "memory_bandwidth_gbs, node_bandwidth_gbs, net_bandwidth_gbs; see "
                          "docs/plan.md)"));
  };
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    fail("cannot read the device file");
  } catch (const YAML::Exception& e) {
    fail(str("line ", e.mark.line + 1, ": not YAML"));
  }
  if (!root.IsMap()) fail("not a mapping");
  // A misspelt key would silently leave its default: refused, with the nearest valid one.
  const std::vector<std::string> keys = {"name",
                                         "source",
                                         "bf16_tflops",
                                         "fp32_tflops",
                                         "memory_gib",
                                         "memory_bandwidth_gbs",
                                         "node_bandwidth_gbs",
                                         "net_bandwidth_gbs",
                                         "gpus_per_node",
                                         "collective_latency_us",
                                         "node_latency_us",
                                         "net_latency_us",
                                         "reserve_gib",
                                         "matmul_efficiency",
                                         "memory_efficiency",
                                         "link_efficiency",
                                         "launch_us"};
  for (const auto& entry : root) {
    const std::string key = entry.first.Scalar();
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
    const std::string near = closest(key, keys);
    throw ConfigError(str(path, ": '", key, "' is not a device key",
                          near.empty() ? "" : " (did you mean '" + near + "'?)",
                          " (valid: ", join(keys, ", "), "; see docs/plan.md)"));
  }
  const auto number = [&](const char* key, bool required, double fallback) {
    const YAML::Node v = root[key];
    if (!v.IsDefined()) {
      if (required) fail(str("'", key, "' is missing"));
      return fallback;
    }
    double x = 0;
    try {
      x = v.as<double>();
    } catch (const YAML::Exception&) {
      fail(str("'", key, "' is ",
               v.IsScalar() ? "'" + v.Scalar() + "'"
                            : std::string(v.IsSequence() ? "a list" : "a mapping"),
               ", not a number"));
    }
    if (!(x > 0) || !std::isfinite(x)) fail(str("'", key, "' is ", x, ", must be > 0"));
    return x;
  };
  GpuModel d;
  d.name = root["name"] && root["name"].IsScalar() ? root["name"].Scalar() : path;
  d.source = root["source"] && root["source"].IsScalar() ? root["source"].Scalar() : path;
  d.bf16_flops = number("bf16_tflops", true, 0) * kT;
  d.fp32_flops = number("fp32_tflops", true, 0) * kT;
  d.memory_bytes = number("memory_gib", true, 0) * kGiB;
  d.memory_bandwidth = number("memory_bandwidth_gbs", true, 0) * kG;
  d.node_bandwidth = number("node_bandwidth_gbs", true, 0) * kG;
  d.net_bandwidth = number("net_bandwidth_gbs", true, 0) * kG;
  const double per_node = number("gpus_per_node", false, d.gpus_per_node);
  if (per_node != std::floor(per_node) || per_node > 1024) {
    fail(str("'gpus_per_node' is ", per_node, ", must be a whole number from 1 to 1024"));
  }
  d.gpus_per_node = static_cast<int>(per_node);
  d.collective_latency = number("collective_latency_us", false, d.collective_latency * 1e6) / 1e6;
  d.node_latency = number("node_latency_us", false, d.node_latency * 1e6) / 1e6;
  d.net_latency = number("net_latency_us", false, d.net_latency * 1e6) / 1e6;
  if (root["reserve_gib"]) d.reserve_bytes = number("reserve_gib", true, 0) * kGiB;
  d.matmul_efficiency = number("matmul_efficiency", false, d.matmul_efficiency);
  d.memory_efficiency = number("memory_efficiency", false, d.memory_efficiency);
  d.link_efficiency = number("link_efficiency", false, d.link_efficiency);
  d.launch_seconds = number("launch_us", false, d.launch_seconds * 1e6) / 1e6;
  for (auto [key, value] : {std::pair{"matmul_efficiency", d.matmul_efficiency},
                            std::pair{"memory_efficiency", d.memory_efficiency},
                            std::pair{"link_efficiency", d.link_efficiency}}) {
    if (value > 1) fail(str("'", key, "' is ", value, ", must be in (0, 1]"));
  }
  return d;
}

}  // namespace triax
