// defines: triax::ComputeTiming, triax::LinkFit, triax::LinkClass, triax::Collective,
//          triax::Profile, triax::model_key, triax::nominal_profile
//
// What the planner knows about the machine, per model shape: measured by `triax calibrate`
// (plan/calibrate.h) and written as a small YAML file, or — without one — nominal figures from
// the FLOP count, so a plan is never refused for lack of a profile (it says which it used).
//   compute   per (tp, micro-batch, recompute, sequence parallelism): one transformer layer's
//             forward and backward time, and what the first stage (embedding) and the last
//             (final norm, head, loss) add, all measured with real tp groups (their collectives
//             included) and with every rank of the calibration busy at once, as in training;
//             the weight passes' share of a backward (zero-bubble schedules' W)
//   links     α–β fits, time = α + β·bytes, per collective, group size and link class (inside
//             a node, across nodes)
//   optimizer seconds per parameter of one optimizer step (clipping, update)
//   waiting   on an oversubscribed CPU node, the share of a core a waiting rank still takes
//   op        one small operation's time (context parallelism's ring runs many on small blocks)
//   sync      what an exchange between ranks that did the same work costs (their skew)
// Profiles are for one model shape: model_key() names it, and the planner refuses to use a
// profile calibrated for another shape (a layer's time depends on hidden, heads, sequence...).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config.h"

namespace triax {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kSendRecv };
enum class LinkClass { kNode, kNet };  ///< inside a node; across nodes

const char* collective_name(Collective op);  ///< "all_reduce", ..., "send_recv"
const char* link_name(LinkClass link);       ///< "node", "net"
/// Ring steps of a collective over n ranks, and the share of the buffer each rank sends: what
/// scales a fit measured at one group size to another (all-reduce 2(n-1) steps of 1/n each).
double ring_steps(Collective op, int n);
double ring_bytes(Collective op, int n);

/// Seconds of one micro-batch, forward and backward.
struct PassTime {
  double forward = 0;
  double backward = 0;
};

struct ComputeTiming {
  int tp = 1;
  int64_t micro_batch = 1;
  Recompute recompute = Recompute::kNone;
  bool sequence = false;
  PassTime layer;             ///< one transformer layer
  PassTime first;             ///< what the first stage adds (embedding)
  PassTime last;              ///< what the last stage adds (final norm, head, loss)
  double weight_share = 0.5;  ///< W's share of a layer's backward (split backward)
};

struct LinkFit {
  Collective op = Collective::kAllReduce;
  int group = 2;  ///< ranks in the group (send_recv: 2)
  LinkClass link = LinkClass::kNode;
  double alpha = 0;  ///< seconds
  double beta = 0;   ///< seconds per byte of the buffer (all-gather: of the output)
  double time(double bytes) const { return alpha + beta * bytes; }
};

struct Profile {
  std::string model;       ///< model_key() of the config it was calibrated for
  std::string source;      ///< "calibrated on HOST, DATE" or "nominal (no profile)"
  int ranks_per_node = 1;  ///< ranks busy on each node while measuring
  int cores_per_node = 1;  ///< the node's CPUs (CPU runs: ranks above it time-share cores)
  int threads_per_rank = 1;
  double optimizer_per_parameter = 0;  ///< seconds per parameter on the rank
  double step_overhead = 0;            ///< seconds per step outside the model (loss sync, ...)
  double base_bytes = 0;  ///< a rank's resident memory before its model (libraries, MPI)
  /// On a node with more ranks than cores: the share of a core a rank waiting for a message
  /// still takes (it polls, yielding between tests), 0 .. 1, measured; 1 where not measured.
  double wait_share = 1;
  /// One small LibTorch operation's time (dispatch and a pass over a few KiB), measured with
  /// every rank busy: what context parallelism pays per operation on its blocks beyond their
  /// FLOPs. kOpSeconds where not measured (nominal profiles, profiles from before it).
  double op_seconds = kOpSeconds;
  static constexpr double kOpSeconds = 5e-6;
  /// What a rank loses at an exchange with its ring neighbours after the same work (their skew),
  /// measured; 0 where not (nominal profiles, profiles from before it).
  double sync_seconds = 0;
  /// Figures from the FLOP count, not measured: layer times exclude tp collectives (the
  /// prediction adds them from the links) and do not depend on ranks per node.
  bool nominal = false;
  std::vector<ComputeTiming> compute;
  std::vector<LinkFit> links;

  // Planning a device not at hand (plan/device_compute.h); empty or zero otherwise.
  std::string device;  ///< its name
  /// Timings computed for whatever shape is asked (the model's kernels on the device's roofline)
  /// rather than read from `compute`.
  std::function<ComputeTiming(int tp, int64_t micro_batch, Recompute recompute, bool sequence)>
      analytic;
  double peak_flops = 0;  ///< a rank's matmul peak in the run's precision: MFU's denominator
  /// Gradient buckets are reduced while backward still runs (NCCL on its own stream); on a CPU
  /// the sums take the cores backward uses, so they are counted after it.
  bool overlaps_grad_sync = false;
  /// Bytes of an activation's element in messages (tp collectives, pipeline sends).
  double message_element_bytes = 4;
  /// Network links of a node a collective can spread over (a GPU node has a NIC per GPU:
  /// NCCL runs a ring channel through each); 1 where calibrated (one rank per node measured).
  int net_rails = 1;

  /// The timing of that shape: measured, interpolated (linear in the micro-batch between
  /// measured ones, proportional beyond them) or, for a tp not measured, scaled from the
  /// nearest measured tp by the FLOP share (1/tp). Throws Error when nothing for that
  /// recompute mode was measured.
  ComputeTiming timing(int tp, int64_t micro_batch, Recompute recompute, bool sequence) const;
  /// The fit for `op` over `group` ranks on `link`: the measured group size nearest in
  /// log-size (α and β scaled by the ring algorithm's step counts when it differs), or the
  /// inside-node fit with nominal network figures when `link` was not measured.
  /// `per_node`: the group's ranks on each node it spans. Across nodes, their traffic spreads
  /// over min(per_node, net_rails) of a node's network links, at most as fast as the node's own.
  LinkFit link(Collective op, int group, LinkClass link, int per_node = 1) const;
  bool has_link(LinkClass link) const;

  std::string to_yaml() const;
  /// Throws ConfigError naming the file and the field on a malformed profile.
  static Profile read(const std::string& path);
  void write(const std::string& path) const;
};

/// The model's shape, as far as it decides a layer's time: "gpt h128 a4 kv4 s64 V256 fp32".
std::string model_key(const Config& config);

/// Figures from the FLOP count (`flops_per_second` per rank; 0: 40% of run.peak_tflops when set,
/// else 20 GFLOP/s, a CPU core's fp32 matmul) and nominal links (shared memory: 5 µs, 5 GB/s;
/// network: 50 µs, 1 GB/s), for planning without a calibration.
Profile nominal_profile(const Config& config, double flops_per_second = 0);

}  // namespace triax
