#include "plan/calibrate.h"

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <functional>
#include <thread>

#include "core/autocast_scope.h"
#include "core/error.h"
#include "core/mixed_precision.h"
#include "core/peak_memory.h"
#include "core/strings.h"
#include "core/timing.h"
#include "models/model_spec.h"
#include "plan/candidate.h"
#include "schedules/split_backward.h"
#include "train/optim/optimizer.h"

namespace triax {
namespace {

using Clock = SteadyClock;

// The slowest rank's figures (a step waits for it).
std::vector<double> slowest(Communicator& world, const std::vector<double>& mine) {
  return world.max_over_ranks(mine);
}

// Repetitions for a measurement whose one run took `once` seconds: enough for `window`
// seconds, so the operating system's time-sharing of oversubscribed cores (slices of
// milliseconds) averages out as it does over a training step; the same on every rank (a tp
// group's collectives must match), so the largest.
int repetitions(Communicator& world, double once, double window) {
  const double wanted = std::min(200.0, std::max(1.0, std::ceil(window / std::max(once, 1e-7))));
  return static_cast<int>(slowest(world, {wanted})[0]);
}

constexpr double kWindow = 0.04;  // seconds per measured figure
constexpr int kWindows = 3;       // each figure: the median of this many windows

struct StageTimes {
  double forward = 0, backward = 0;
};

// One stage of one layer: the mean forward and backward time of one micro-batch. The first
// stage reads tokens; the others get a random activation; the last adds its loss.
StageTimes time_stage(Communicator& world, ModelChunk& chunk, const ModelSpec& spec,
                      const Config& c, int tp, int stage, const Batch& micro) {
  const bool sp = c.parallel.sequence && tp > 1;
  const MixedPrecision precision(c);
  const auto shape = spec.activation_shape(c, micro.size(), tp, sp);
  const auto run = [&](StageTimes* sum) {
    torch::Tensor input;
    if (stage > 0) input = torch::randn(shape).requires_grad_(true);
    const auto start = Clock::now();
    torch::Tensor out, loss;
    {
      const auto scope = precision.compute_scope();
      out = chunk.forward(input, micro);
      if (stage == 2) loss = chunk.loss(out, micro);
    }
    sum->forward += seconds_since(start);
    torch::Tensor grad;
    if (stage < 2) grad = torch::randn_like(out);
    const auto back = Clock::now();
    if (stage == 2) {
      loss.backward();
    } else {
      torch::autograd::backward({out}, {grad});
    }
    sum->backward += seconds_since(back);
  };
  StageTimes once;
  run(&once);  // warm-up, and the measure of how many repetitions fill a window
  const int n = repetitions(world, once.forward + once.backward, kWindow / kWindows);
  // The median of a few windows: one that another process interrupted does not count.
  std::vector<double> forward, backward;
  for (int w = 0; w < kWindows; ++w) {
    world.barrier();
    StageTimes sum;
    for (int i = 0; i < n; ++i) run(&sum);
    forward.push_back(sum.forward / n);
    backward.push_back(sum.backward / n);
  }
  return {median(forward), median(backward)};
}

// W's share of the middle stage's backward, run split (schedules/split_backward.h).
double weight_share(Communicator& world, ModelChunk& chunk, const ModelSpec& spec, const Config& c,
                    int tp, const Batch& micro) {
  const bool sp = c.parallel.sequence && tp > 1;
  const MixedPrecision precision(c);
  const auto run = [&](double* input_time, double* weight_time) {
    torch::Tensor input =
        torch::randn(spec.activation_shape(c, micro.size(), tp, sp)).requires_grad_(true);
    torch::Tensor out;
    {
      const auto scope = precision.compute_scope();
      out = chunk.forward(input, micro);
    }
    const torch::Tensor grad = torch::randn_like(out);
    DeferredWeights deferred;
    const auto start = Clock::now();
    backward_input(out, grad, input, &deferred);
    *input_time += seconds_since(start);
    const auto w = Clock::now();
    backward_weight(&deferred);
    *weight_time += seconds_since(w);
  };
  double i_once = 0, w_once = 0;
  run(&i_once, &w_once);
  const int n = repetitions(world, i_once + w_once, kWindow / 2 / kWindows);
  std::vector<double> shares;
  for (int w = 0; w < kWindows; ++w) {
    world.barrier();
    double i_sum = 0, w_sum = 0;
    for (int k = 0; k < n; ++k) run(&i_sum, &w_sum);
    shares.push_back(w_sum / std::max(1e-12, i_sum + w_sum));
  }
  return median(shares);
}

std::vector<ComputeTiming> calibrate_compute(const Config& config, Communicator& world,
                                             const CalibrateOptions& options) {
  const ModelSpec& spec = model_spec(config.model.arch);
  std::vector<ComputeTiming> rows;
  // The tp sizes the family's own rules allow (ModelSpec::check_layout: heads, kv heads).
  const auto fits = [&](int tp) {
    Config c = config;
    c.parallel.tensor = tp;
    c.parallel.pipeline = 1;
    c.parallel.sequence = false;
    try {
      spec.check_layout(c);
      return true;
    } catch (const ConfigError&) {
      return false;
    }
  };
  for (int tp = 1; tp <= world.size(); tp *= 2) {
    if (world.size() % tp != 0 || !fits(tp)) continue;
    const std::unique_ptr<Communicator> group = world.split(world.rank() / tp, world.rank());
    for (Recompute mode : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      for (bool sp : {false, true}) {
        if (sp && tp == 1) continue;
        for (int64_t b = 1; b <= std::min(options.max_micro_batch, config.train.global_batch);
             b *= 2) {
          Candidate shape;  // three one-layer stages of this tp, micro-batch and mode
          shape.tp = tp, shape.pp = 3, shape.micro_batch = b;
          shape.recompute = mode, shape.sequence = sp;
          Config c = shape.applied(config);
          c.model.layers = 3;
          const std::vector<std::pair<int64_t, int64_t>> stages = {{0, 1}, {1, 2}, {2, 3}};
          torch::manual_seed(static_cast<uint64_t>(b));
          const torch::Tensor tokens =
              torch::randint(0, config.model.vocab, {b, config.model.seq_len + 1}, torch::kLong);
          const Batch micro{tokens.narrow(1, 0, config.model.seq_len),
                            tokens.narrow(1, 1, config.model.seq_len)};
          std::vector<double> mine;
          for (int s = 0; s < 3; ++s) {
            const auto chunk = spec.build_chunk(c, s, stages, *group);
            chunk->module().train();
            const StageTimes t = time_stage(world, *chunk, spec, c, tp, s, micro);
            mine.push_back(t.forward);
            mine.push_back(t.backward);
            if (s == 1) mine.push_back(weight_share(world, *chunk, spec, c, tp, micro));
          }
          const std::vector<double> all = slowest(world, mine);
          ComputeTiming row;
          row.tp = tp, row.micro_batch = b, row.recompute = mode, row.sequence = sp;
          row.layer = {all[2], all[3]};
          row.weight_share = all[4];
          row.first = {std::max(0.0, all[0] - all[2]), std::max(0.0, all[1] - all[3])};
          row.last = {std::max(0.0, all[5] - all[2]), std::max(0.0, all[6] - all[3])};
          rows.push_back(row);
        }
      }
    }
  }
  return rows;
}

// Least squares of time = alpha + beta * bytes, both kept >= 0.
void fit(const std::vector<double>& bytes, const std::vector<double>& time, LinkFit* f) {
  const double n = static_cast<double>(bytes.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < bytes.size(); ++i) mx += bytes[i] / n, my += time[i] / n;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    sxy += (bytes[i] - mx) * (time[i] - my);
    sxx += (bytes[i] - mx) * (bytes[i] - mx);
  }
  f->beta = std::max(0.0, sxx > 0 ? sxy / sxx : 0.0);
  f->alpha = std::max(0.0, my - f->beta * mx);
}

double time_collective(Communicator& world, Communicator& group, Collective op, int64_t elements) {
  const int64_t n = (elements + group.size() - 1) / group.size() * group.size();
  torch::Tensor full = torch::ones({n});
  torch::Tensor part = torch::ones({n / group.size()});
  const auto run = [&] {
    switch (op) {
      case Collective::kAllReduce:
        group.all_reduce(full, ReduceOp::kSum);
        break;
      case Collective::kAllGather:
        group.all_gather_async(full, part)->wait();
        break;
      case Collective::kReduceScatter:
        group.reduce_scatter_async(part, full, ReduceOp::kSum)->wait();
        break;
      case Collective::kSendRecv:  // ping-pong
        if (group.rank() == 0) {
          group.isend(full, 1)->wait();
          group.irecv(full, 1)->wait();
        } else {
          group.irecv(full, 0)->wait();
          group.isend(full, 0)->wait();
        }
        break;
    }
  };
  auto start = Clock::now();
  run();
  const int reps = repetitions(world, seconds_since(start), kWindow / 2 / kWindows);
  std::vector<double> times;
  for (int w = 0; w < kWindows; ++w) {
    world.barrier();
    start = Clock::now();
    for (int i = 0; i < reps; ++i) run();
    times.push_back(seconds_since(start) / reps);
  }
  const double t = median(times);
  return op == Collective::kSendRecv ? t / 2 : t;  // one way: half the round trip
}

std::vector<LinkFit> calibrate_links(Communicator& world, const NodeTopology& nodes) {
  std::vector<LinkFit> fits;
  if (world.size() < 2) return fits;
  const int rank = world.rank();
  const int node = nodes.node_of(rank);
  const int local = nodes.local_rank_of(rank);
  const int per_node = static_cast<int>(nodes.ranks_on(0).size());
  const std::vector<int64_t> sizes = {1 << 10, 1 << 14, 1 << 18, 1 << 21};  // floats
  for (LinkClass link : {LinkClass::kNode, LinkClass::kNet}) {
    const int span = link == LinkClass::kNode ? per_node : nodes.num_nodes();
    if (link == LinkClass::kNet && nodes.num_nodes() < 2) continue;
    for (int g = 2; g <= span; g *= 2) {
      if (span % g != 0) continue;
      const int color = link == LinkClass::kNode ? node * (per_node / g) + local / g
                                                 : (node / g) * per_node + local;
      const std::unique_ptr<Communicator> group =
          world.split(color, link == LinkClass::kNode ? local : node);
      for (Collective op : {Collective::kAllReduce, Collective::kAllGather,
                            Collective::kReduceScatter, Collective::kSendRecv}) {
        if (op == Collective::kSendRecv && g != 2) continue;
        std::vector<double> bytes, mine;
        for (int64_t elements : sizes) {
          bytes.push_back(static_cast<double>(elements) * 4);
          mine.push_back(time_collective(world, *group, op, elements));
        }
        LinkFit f;
        f.op = op, f.group = g, f.link = link;
        fit(bytes, slowest(world, mine), &f);
        fits.push_back(f);
      }
    }
  }
  return fits;
}

double calibrate_optimizer(const Config& config, Communicator& world, int repeats) {
  const std::unique_ptr<Communicator> self = world.split(world.rank(), 0);
  Config c = config;
  c.optimizer.shard = false;
  c.ddp.shard = ShardLevel::kNone;
  constexpr int64_t kParameters = 1 << 20;
  torch::Tensor w = torch::randn({kParameters}).requires_grad_(true);
  w.mutable_grad() = torch::randn({kParameters});
  auto optimizer = make_optimizer(c, {OptimizedParam{"w", w, true}}, {}, *self, *self);
  std::vector<double> times;
  for (int i = 0; i <= repeats; ++i) {
    const auto start = Clock::now();
    optimizer->step(config.train.clip_grad);
    if (i > 0) times.push_back(seconds_since(start));
  }
  return slowest(world, {median(times) / kParameters})[0];
}

// The share of a core that a rank waiting for a message still takes on an oversubscribed node
// (it polls, yielding between tests: parallel/comm/polled_work.h). All ranks compute a fixed
// amount of work; then half of each node's ranks compute it while their partners wait for a
// message from them. With n ranks on c < n cores the computing ranks speed up by
// s = min(1, c / (n/2 (1 + w))) / (c / n), so w = 2 / s - 1 (where the cap is not reached).
double calibrate_wait_share(Communicator& world, const NodeTopology& nodes) {
  const int per_node = static_cast<int>(nodes.ranks_on(0).size());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (per_node <= cores || per_node < 2) return 1.0;  // no core is shared: it does not matter
  // Pairs of ranks of one node (whatever their numbers): the second waits for the first.
  const std::vector<int>& mates = nodes.ranks_on(nodes.node_of(world.rank()));
  const int local = nodes.local_rank_of(world.rank());
  const bool waits = local % 2 == 1;
  const bool computes_for_partner = !waits && local + 1 < per_node;
  const torch::Tensor a = torch::randn({192, 192});
  const auto work = [&](int n) {
    torch::Tensor x = a;
    for (int i = 0; i < n; ++i) x = torch::tanh(torch::mm(x, a) * 1e-2);
    return x.sum().item<double>();
  };
  auto start = Clock::now();
  work(4);
  const int n = static_cast<int>(
      slowest(world, {std::ceil(0.15 / std::max(1e-6, seconds_since(start) / 4))})[0]);
  std::vector<double> all, half;
  for (int round = 0; round < 3; ++round) {
    world.barrier();
    start = Clock::now();
    work(n);
    all.push_back(seconds_since(start));
    world.barrier();
    torch::Tensor token = torch::zeros({1});
    start = Clock::now();
    if (waits) {
      world.recv(token, mates[local - 1]);
    } else {
      work(n);
      if (computes_for_partner) world.send(token, mates[local + 1]);
    }
    half.push_back(seconds_since(start));
  }
  // The speed-up of the computing ranks, averaged over them.
  torch::Tensor t =
      torch::tensor({waits ? 0.0 : median(all) / median(half), waits ? 0.0 : 1.0}, torch::kDouble);
  world.all_reduce(t, ReduceOp::kSum);
  const double speedup = t[0].item<double>() / std::max(1.0, t[1].item<double>());
  return std::clamp(2.0 / std::max(speedup, 1e-6) - 1.0, 0.0, 1.0);
}

double calibrate_overhead(Communicator& world, int repeats) {
  std::vector<double> times;
  torch::Tensor scalar = torch::zeros({1}, torch::kDouble);
  for (int i = 0; i <= repeats; ++i) {
    world.barrier();
    const auto start = Clock::now();
    world.all_reduce(scalar, ReduceOp::kSum);  // the loss's sync and the global norm's
    world.all_reduce(scalar, ReduceOp::kSum);
    if (i > 0) times.push_back(seconds_since(start));
  }
  return slowest(world, {median(times)})[0];
}

// One small operation's time, with every rank busy at once (as in training): element-wise
// updates of a [8, 16, 16] block, the size of the ring's blocks on short sequences.
double calibrate_op(Communicator& world, int repeats) {
  torch::Tensor x = torch::ones({8, 16, 16});
  const torch::Tensor y = torch::full({8, 16, 16}, 1e-3);
  constexpr int kOps = 2000;
  std::vector<double> times;
  world.barrier();
  for (int i = 0; i <= repeats; ++i) {
    const auto start = Clock::now();
    for (int k = 0; k < kOps; ++k) x.add_(y).mul_(0.5);
    if (i > 0) times.push_back(seconds_since(start) / (2 * kOps));
  }
  return slowest(world, {median(times)})[0];
}

// What a rank loses at an exchange with its ring neighbours after the same work as theirs (the
// context-parallel ring's step, an all-to-all): their skew, which equal FLOPs do not remove
// (cores shared or interrupted). Rounds of ~1 ms of work, then a small block to the next rank and
// one from the previous, against the same rounds without the exchange.
double calibrate_sync(Communicator& world) {
  const int n = world.size(), rank = world.rank();
  if (n < 2) return 0;
  const torch::Tensor a = torch::randn({96, 96});
  const auto work = [&] {
    torch::Tensor x = a;
    for (int i = 0; i < 8; ++i) x = torch::tanh(torch::mm(x, a) * 1e-2);
    return x;
  };
  torch::Tensor out = torch::zeros({1024}), in = torch::zeros({1024});
  const auto exchange = [&] {
    const WorkPtr recv = world.irecv(in, (rank + n - 1) % n, 7399);
    const WorkPtr send = world.isend(out, (rank + 1) % n, 7399);
    send->wait();
    recv->wait();
  };
  constexpr int kRounds = 200;
  // Work alone, the exchange alone (its latency: the send/recv fit's, not skew), and both.
  std::vector<double> alone, bare, exchanging;
  for (int trial = 0; trial < 3; ++trial) {
    world.barrier();
    auto start = Clock::now();
    for (int r = 0; r < kRounds; ++r) work();
    alone.push_back(seconds_since(start));
    world.barrier();
    start = Clock::now();
    for (int r = 0; r < kRounds; ++r) exchange();
    bare.push_back(seconds_since(start));
    world.barrier();
    start = Clock::now();
    for (int r = 0; r < kRounds; ++r) {
      work();
      exchange();
    }
    exchanging.push_back(seconds_since(start));
  }
  const double lost = std::max(0.0, (median(exchanging) - median(alone) - median(bare)) / kRounds);
  return slowest(world, {lost})[0];
}

}  // namespace

void check_calibration(const Config& config) {
  if (!model_spec(config.model.arch).pipelined) {
    throw ConfigError(str("model.arch: ", choice_name(config.model.arch),
                          " runs data-parallel only, so there is no layout to plan (valid: gpt, "
                          "llama)"));
  }
}

Profile calibrate(const Config& config, Communicator& world, const NodeTopology& nodes,
                  const CalibrateOptions& options) {
  check_calibration(config);
  if (!nodes.uniform()) {
    throw ConfigError(
        str("calibrate needs the same number of ranks on every node (", nodes.summary(), ")"));
  }
  Profile p;
  p.model = model_key(config);
  p.base_bytes = slowest(world, {static_cast<double>(peak_rss_bytes())})[0];
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::gmtime(&now));
  p.ranks_per_node = static_cast<int>(nodes.ranks_on(0).size());
  p.cores_per_node = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  p.threads_per_rank = torch::get_num_threads();
  p.source = str("calibrated on ", host, " (", nodes.num_nodes(), " node(s) x ", p.ranks_per_node,
                 " ranks, ", p.threads_per_rank, " thread(s) each), ", date, " UTC");
  p.compute = calibrate_compute(config, world, options);
  p.links = calibrate_links(world, nodes);
  p.optimizer_per_parameter = calibrate_optimizer(config, world, options.repeats);
  p.step_overhead = calibrate_overhead(world, options.repeats);
  p.wait_share = calibrate_wait_share(world, nodes);
  p.op_seconds = calibrate_op(world, options.repeats);
  p.sync_seconds = calibrate_sync(world);
  return p;
}

}  // namespace triax
