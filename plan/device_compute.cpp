#include "plan/device_compute.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "core/strings.h"
#include "models/model_spec.h"
#include "models/stage_balance.h"

namespace triax {

KernelTime kernel_seconds(const Kernel& k, const GpuModel& device, double peak_flops,
                          double element_bytes) {
  const double memory = device.memory_bandwidth * device.memory_efficiency;
  KernelTime t;
  if (k.matmul()) {
    const double bytes = element_bytes * (k.m * k.k + k.k * k.n + k.m * k.n) * k.batch;
    const double one =
        std::max(k.flops() / (peak_flops * device.matmul_efficiency), bytes / memory) +
        device.launch_seconds;
    t.forward = one;
    t.backward = 2 * one;  // the input's gradient and the weight's (or the other input's)
    t.weight = k.weight ? one : 0;
  } else {
    t.forward = k.bytes / memory + device.launch_seconds;
    t.backward = 2 * k.bytes / memory + device.launch_seconds;
  }
  return t;
}

namespace {

struct PartTime {
  PassTime pass;
  double weight = 0;
  double core = 0;  // forward of the attention core (selective recompute's replay)
};

PartTime part_time(const std::vector<Kernel>& kernels, const GpuModel& device, double peak,
                   double element_bytes) {
  PartTime out;
  for (const Kernel& k : kernels) {
    const KernelTime t = kernel_seconds(k, device, peak, element_bytes);
    out.pass.forward += t.forward;
    out.pass.backward += t.backward;
    out.weight += t.weight;
    if (k.attention_core) out.core += t.forward;
  }
  return out;
}

using TimingKey = std::tuple<int, int64_t, int, bool>;

}  // namespace

Profile device_profile(const Config& config, const GpuModel& device) {
  Profile p;
  p.model = model_key(config);
  p.source = str("device ", device.describe(), " (", device.source, ")");
  p.nominal = true;  // layer times without tp collectives: the links add them
  p.device = device.name;
  p.ranks_per_node = device.gpus_per_node;
  p.cores_per_node = device.gpus_per_node;
  const bool bf16 = config.train.precision == Precision::kBf16;
  const double element = bf16 ? 2 : 4;
  p.peak_flops = bf16 ? device.bf16_flops : device.fp32_flops;
  p.message_element_bytes = element;
  p.overlaps_grad_sync = true;
  p.net_rails = device.gpus_per_node;  // a NIC per GPU (DGX/HGX)
  p.base_bytes = device.reserve();
  p.optimizer_per_parameter = 32 / (device.memory_bandwidth * device.memory_efficiency);
  p.op_seconds = device.launch_seconds;
  p.sync_seconds = 0;

  const ModelSpec* spec = &model_spec(config.model.arch);
  const ModelConfig model = config.model;
  const double peak = p.peak_flops;
  // Shared by the planner's threads (plan_layouts).
  struct Cache {
    std::mutex lock;
    std::map<TimingKey, ComputeTiming> timings;
  };
  auto cache = std::make_shared<Cache>();
  p.analytic = [=](int tp, int64_t micro_batch, Recompute recompute, bool sequence) {
    const bool sp = sequence && tp > 1;
    const TimingKey key{tp, micro_batch, static_cast<int>(recompute), sp};
    {
      const std::lock_guard<std::mutex> hold(cache->lock);
      if (auto it = cache->timings.find(key); it != cache->timings.end()) return it->second;
    }
    ComputeTiming t;
    t.tp = tp, t.micro_batch = micro_batch, t.recompute = recompute, t.sequence = sp;
    if (spec->kernels) {
      const StageKernels k = spec->kernels(model, KernelShape{tp, micro_batch, sp, element});
      const PartTime layer = part_time(k.layer, device, peak, element);
      const PartTime first = part_time(k.first, device, peak, element);
      const PartTime last = part_time(k.last, device, peak, element);
      t.layer = layer.pass;
      if (recompute == Recompute::kFull) t.layer.backward += layer.pass.forward;
      if (recompute == Recompute::kSelective) t.layer.backward += layer.core;
      t.first = first.pass;
      t.last = last.pass;
      t.weight_share = t.layer.backward > 0 ? layer.weight / t.layer.backward : 0;
    } else {
      // A family without a kernel list: its FLOPs at the matmul rate, a third forward.
      const StageCosts costs = stage_costs(model, spec->flops_per_unit);
      const double units = static_cast<double>(spec->units_per_sample(model) * micro_batch) / tp;
      const double rate = peak * device.matmul_efficiency;
      const auto pass = [&](double flops) {
        return PassTime{flops * units / rate / 3 + device.launch_seconds,
                        2 * flops * units / rate / 3 + device.launch_seconds};
      };
      t.layer = pass(costs.layer), t.first = pass(costs.first), t.last = pass(costs.last);
      if (recompute == Recompute::kFull) t.layer.backward += t.layer.forward;
    }
    const std::lock_guard<std::mutex> hold(cache->lock);
    cache->timings.emplace(key, t);
    return t;
  };

  for (Collective op : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                        Collective::kSendRecv}) {
    for (LinkClass link : {LinkClass::kNode, LinkClass::kNet}) {
      const bool node = link == LinkClass::kNode;
      const double bandwidth =
          (node ? device.node_bandwidth : device.net_bandwidth) * device.link_efficiency;
      const double hop = node ? device.node_latency : device.net_latency;
      for (int n = 2; n <= 16384; n *= 2) {
        if (op == Collective::kSendRecv && n > 2) break;
        const double base = op == Collective::kSendRecv ? 0 : device.collective_latency;
        p.links.push_back(
            LinkFit{op, n, link, base + ring_steps(op, n) * hop, ring_bytes(op, n) / bandwidth});
      }
    }
  }
  return p;
}

}  // namespace triax
