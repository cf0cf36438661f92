// Benchmark (not a test): the data-parallel gradient all-reduce across nodes, flat against
// node-aware (ddp.hierarchical), measured and predicted by the alpha-beta model, and the
// trainer's own step (Trainer::step) with each. Run by tools/bench/multinode.sh on namespace
// nodes; on a real cluster:
//   mpirun -hosts a:2,b:2 build/triax_bench_allreduce [CONFIG.yaml] [--set K=V ...] [--reps R]
//   (or under torchrun: the tcp backend, Gloo)
// The model gets a data-parallel group of all ranks (tp = pp = 1). Per link kind (two ranks on
// one node, two on different nodes) an exchange (both send at once) measures alpha (8 bytes) and
// beta (seconds per byte, 4 MiB messages). Predictions, n = gradient bytes, L ranks per node,
// N nodes, p = L * N; an inter-node step's time counts every flow that shares a node's link:
//   mpi flat   MPICH's recursive halving + doubling; with node-consecutive ranks its first
//              log2 L halving steps stay inside a node: 2 * sum over steps of (alpha + bytes*beta)
//   tcp flat   Gloo's ring over p ranks: 2 (p-1) steps of n/p, each as slow as a crossing hop
//   hier       reduce-scatter inside (mpi: recursive halving; tcp: Gloo has no reduce-scatter,
//              an all-reduce), all-reduce of n/L across N nodes by L concurrent flows,
//              all-gather inside
//   bf16       ddp.reduce_dtype: bf16, flat: mpi as flat with n/2 (bf16 words, summed in bf16);
//              tcp as flat (Gloo reduces 16-bit floats in fp32)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/compute_threads.h"
#include "core/launch_env.h"
#include "core/timing.h"
#include "job/job_start.h"
#include "models/gpt_spec.h"
#include "parallel/comm/hierarchical_communicator.h"
#include "parallel/comm/world.h"
#include "train/trainer.h"

using namespace triax;

namespace {

using Clock = SteadyClock;

struct Link {
  double alpha = 0;  // s
  double beta = 0;   // s per byte
};

// Time for ranks a and b to exchange `bytes` each way at once (both send and receive together,
// as every step of the collectives below does; on a duplex link this also carries the other
// direction's acknowledgements), median of reps.
double exchange(Communicator& world, int a, int b, int64_t bytes, int reps) {
  torch::Tensor out = torch::zeros({std::max<int64_t>(1, bytes / 4)});
  torch::Tensor in = torch::zeros_like(out);
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    world.barrier();
    const auto start = Clock::now();
    if (world.rank() == a || world.rank() == b) {
      const int peer = world.rank() == a ? b : a;
      WorkPtr recv = world.irecv(in, peer);
      WorkPtr send = world.isend(out, peer);
      send->wait();
      recv->wait();
    }
    times.push_back(seconds_since(start));
  }
  torch::Tensor t = torch::tensor(median(times), torch::kDouble);
  world.broadcast(t, a);
  return t.item<double>();
}

Link measure_link(Communicator& world, int a, int b) {
  const int64_t big = 4 << 20;  // past the shaper's burst allowance
  Link link;
  link.alpha = exchange(world, a, b, 8, 30);
  link.beta =
      std::max(0.0, (exchange(world, a, b, big, 8) - link.alpha) / static_cast<double>(big));
  return link;
}

double log2i(int x) {
  return std::log2(static_cast<double>(x));
}

// Recursive halving over `ranks` ranks of `bytes` where each step's traffic is multiplied by
// `share` flows on the link: sum over log2(ranks) steps of alpha + bytes/2^(k+1) * share * beta.
double halving(const Link& link, double bytes, int ranks, double share) {
  double t = 0;
  for (int k = 0; k < static_cast<int>(log2i(ranks)); ++k) {
    t += link.alpha + bytes / std::pow(2.0, k + 1) * share * link.beta;
  }
  return t;
}

struct Prediction {
  double flat = 0, hier = 0, leader = 0;
  double flat_bf16 = 0;  ///< flat with bf16 words: half of n under MPI; Gloo widens them to fp32
};

Prediction predict(const std::string& backend, const Link& intra, const Link& inter, double n,
                   int local, int nodes) {
  const int p = local * nodes;
  Prediction out;
  if (backend == "mpi") {
    // Flat: the first log2 L halving steps (n/2 .. n/L) inside a node, the rest across, where
    // all L ranks of a node send at once; then the same steps again for the all-gather.
    out.flat = 2 * (halving(intra, n, local, 1) + halving(inter, n / local, nodes, local));
    out.flat_bf16 =
        2 * (halving(intra, n / 2, local, 1) + halving(inter, n / 2 / local, nodes, local));
    out.hier = 2 * halving(intra, n, local, 1) + 2 * halving(inter, n / local, nodes, local);
    // All-reduce in node (halving + doubling), one flow of n across, broadcast (binomial tree
    // for this size in MPICH: log2 L steps of n).
    out.leader = 2 * halving(intra, n, local, 1) + 2 * halving(inter, n, nodes, 1) +
                 log2i(local) * (intra.alpha + n * intra.beta);
  } else {
    const Link& hop = nodes > 1 ? inter : intra;
    out.flat = 2 * (p - 1) * (hop.alpha + n / p * hop.beta);
    out.flat_bf16 = out.flat;
    const double in_node = (local - 1) * (intra.alpha + n / local * intra.beta);
    out.hier = 2 * in_node                                                 // all-reduce
               + 2 * (nodes - 1) * (inter.alpha + n / nodes * inter.beta)  // across, L flows
               + in_node;                                                  // all-gather
    out.leader = 2 * in_node + 2 * (nodes - 1) * (inter.alpha + n / nodes * inter.beta) +
                 log2i(local) * (intra.alpha + n * intra.beta);
  }
  return out;
}

struct Args {
  std::string path;
  std::vector<std::string> overrides;
  int reps = 15;
};

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
      args.overrides.push_back(argv[++i]);
    } else if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      args.reps = std::max(3, std::atoi(argv[++i]));
    } else {
      args.path = argv[i];
    }
  }
  args.overrides.push_back("parallel.tensor=1");
  args.overrides.push_back("parallel.pipeline=1");
  return args;
}

void run_bench(const Config& config, int reps, const LaunchEnv& launch,
               const std::shared_ptr<Communicator>& world) {
  set_compute_threads(1);
  const RunPlan plan = plan_run(config, world->size(), DataCheck::kSkip);
  // One context per dp gradient scheme: the context builds its gradient communicator once.
  ParallelContext context(world, plan.layout, local_node_key(launch.node_index),
                          Hierarchical::kFalse);
  const NodeTopology& nodes = context.nodes();
  const int local = static_cast<int>(nodes.ranks_on(0).size());
  const bool root = world->rank() == 0;
  if (nodes.num_nodes() < 2 || !nodes.uniform()) {
    if (root) std::printf("needs >= 2 nodes with equal ranks; have %s\n", nodes.summary().c_str());
    return;
  }
  ParallelContext hier_context(world, plan.layout, local_node_key(launch.node_index),
                               Hierarchical::kTrue);
  Config flat_config = config, hier_config = config;
  flat_config.ddp.hierarchical = Hierarchical::kFalse;
  hier_config.ddp.hierarchical = Hierarchical::kTrue;
  Config bf16_config = flat_config;  // ddp.reduce_dtype: bf16, flat: half the bytes on the link
  bf16_config.ddp.reduce_dtype = Precision::kBf16;
  Trainer flat_trainer(plan_run(flat_config, world->size(), DataCheck::kSkip), context);
  Trainer hier_trainer(plan_run(hier_config, world->size(), DataCheck::kSkip), hier_context);
  Trainer bf16_trainer(plan_run(bf16_config, world->size(), DataCheck::kSkip), context);
  Communicator& flat = context.dp_gradients();
  Communicator& hier = hier_context.dp_gradients();
  std::vector<int> node_of_rank;
  for (int r = 0; r < world->size(); ++r) node_of_rank.push_back(nodes.node_of(r));
  HierarchicalCommunicator leader(*world, node_of_rank, HierarchicalCommunicator::Scheme::kLeader);
  int64_t numel = 0;
  for (const auto& p : flat_trainer.chunks()[0]->module().parameters()) numel += p.numel();
  const double n = static_cast<double>(numel) * 4;

  // Links: rank 0 with its node's second rank, and with the first rank of the next node.
  const Link intra = local > 1 ? measure_link(*world, 0, nodes.ranks_on(0)[1]) : Link{};
  const Link inter = measure_link(*world, 0, nodes.ranks_on(1)[0]);

  // All-reduce of the gradient's size, flat and hierarchical in alternate rounds.
  torch::Tensor grads = torch::randn({numel});
  torch::Tensor bf16_grads = grads.to(torch::kBFloat16);
  std::vector<double> flat_times, hier_times, leader_times, bf16_times;
  for (int r = 0; r < reps + 2; ++r) {
    for (Communicator* comm : {&flat, &hier, static_cast<Communicator*>(&leader)}) {
      world->barrier();
      const auto start = Clock::now();
      comm->all_reduce(grads, ReduceOp::kAvg);
      if (r < 2) continue;  // warm-up (connections)
      (comm == &flat   ? flat_times
       : comm == &hier ? hier_times
                       : leader_times)
          .push_back(seconds_since(start));
    }
    world->barrier();
    const auto start = Clock::now();
    flat.all_reduce(bf16_grads, ReduceOp::kSum);
    if (r >= 2) bf16_times.push_back(seconds_since(start));
  }
  const double flat_ar = median(world->max_over_ranks(flat_times));
  const double hier_ar = median(world->max_over_ranks(hier_times));
  const double leader_ar = median(world->max_over_ranks(leader_times));
  const double bf16_ar = median(world->max_over_ranks(bf16_times));
  const Prediction model = predict(world->backend(), intra, inter, n, local, nodes.num_nodes());

  // The trainer's step with each, alternating; compute = step minus exposed DDP wait.
  const auto batch = [&](int step) { return random_token_batch(config, step); };
  std::vector<double> flat_steps, hier_steps, bf16_steps, compute;
  for (int s = 0; s < reps + 2; ++s) {
    for (Trainer* trainer : {&flat_trainer, &hier_trainer, &bf16_trainer}) {
      world->barrier();
      const auto start = Clock::now();
      trainer->step(batch(s));
      const double t = seconds_since(start);
      if (s < 2) continue;
      (trainer == &flat_trainer   ? flat_steps
       : trainer == &hier_trainer ? hier_steps
                                  : bf16_steps)
          .push_back(t);
      if (trainer != &bf16_trainer) {
        compute.push_back(trainer->last_phases().total - trainer->last_phases().ddp_wait);
      }
    }
  }
  const double flat_step = median(world->max_over_ranks(flat_steps));
  const double hier_step = median(world->max_over_ranks(hier_steps));
  const double bf16_step = median(world->max_over_ranks(bf16_steps));
  const double compute_step = median(world->max_over_ranks(compute));
  const double tokens = static_cast<double>(config.train.global_batch * config.model.seq_len);
  if (!root) return;
  std::printf("%s backend, %s; gradient %.2f MiB (%lld floats)\n", world->backend().c_str(),
              nodes.summary().c_str(), n / 1048576, static_cast<long long>(numel));
  std::printf(
      "links measured (exchange): intra-node alpha %.1f us, %.2f GB/s | inter-node "
      "alpha %.1f us, %.3f GB/s | intra/inter bandwidth %.1fx\n",
      intra.alpha * 1e6, 1e-9 / std::max(intra.beta, 1e-15), inter.alpha * 1e6,
      1e-9 / std::max(inter.beta, 1e-15), inter.beta / std::max(intra.beta, 1e-15));
  std::printf("%-28s %10s %10s %8s\n", "all-reduce of the gradient", "measured", "predicted",
              "error");
  const auto row = [](const char* name, double measured, double predicted) {
    std::printf("%-28s %8.2f ms %8.2f ms %+7.0f%%\n", name, measured * 1e3, predicted * 1e3,
                100 * (measured - predicted) / predicted);
  };
  row("flat", flat_ar, model.flat);
  row("hierarchical", hier_ar, model.hier);
  row("hierarchical, leaders only", leader_ar, model.leader);
  // Half the bytes: the model's bandwidth term halves, its latency term does not.
  row("flat, bf16 (reduce_dtype)", bf16_ar, model.flat_bf16);
  std::printf(
      "hierarchical speed-up: measured %.2fx, predicted %.2fx (goal >= 1.5x when the "
      "inter-node link is >= 10x slower)\n",
      flat_ar / hier_ar, model.flat / model.hier);
  std::printf("training step (Trainer::step, global batch %lld x %lld tokens):\n",
              static_cast<long long>(config.train.global_batch),
              static_cast<long long>(config.model.seq_len));
  const auto step_row = [&](const char* name, double measured, double predicted_ar) {
    // Predicted: compute plus the whole all-reduce (no overlap) .. compute alone (full overlap).
    std::printf("  %-12s %8.0f tokens/s (step %6.1f ms); predicted %6.0f .. %6.0f tokens/s\n", name,
                tokens / measured, measured * 1e3, tokens / (compute_step + predicted_ar),
                tokens / compute_step);
  };
  step_row("flat", flat_step, model.flat);
  step_row("hierarchical", hier_step, model.hier);
  step_row("flat bf16", bf16_step, model.flat_bf16);
  std::printf("ddp.reduce_dtype: bf16 against fp32, flat: all-reduce %.2fx, step %.2fx faster\n",
              flat_ar / bf16_ar, flat_step / bf16_step);
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  JobSteps job;
  job.prepare = [&](const LaunchEnv&) {
    return args.path.empty() ? parse_config("model:\n  arch: gpt\n", args.overrides)
                             : load_config(args.path, args.overrides);
  };
  job.run = [&](World& world, const JobStart& start, const ThreadChoice&, RankTable&) {
    run_bench(start.config, args.reps, start.launch, world.communicator());
  };
  return run_job(job, &argc, &argv);
}
