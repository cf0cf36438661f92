// The planner's pure parts (plan/): enumeration, memory and step-time prediction, ranking, the
// profile file, `parallel: auto`'s choice and the dry run. Predictions are checked against
// figures worked out by hand from a made-up profile, and the parameter bytes against the
// parameters of the model the spec really builds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "models/model_spec.h"
#include "parallel/comm/mpi_communicator.h"
#include "plan/candidate.h"
#include "plan/dry_run.h"
#include "plan/planner.h"
#include "plan/predict.h"
#include "plan/profile.h"
#include "schedules/schedule_check.h"
#include "support/tiny_gpt.h"
#include "support/tiny_llama.h"
#include "train/run_plan.h"

using Catch::Contains;
using namespace triax;

namespace {

Config tiny() {
  Config c = testing::tiny_gpt_config(1, 1, "1f1b", 1);
  c.train.global_batch = 16;
  c.train.micro_batch = 0;
  return c;
}

// Every layer 1 ms forward and 2 ms backward at micro-batch 1 (proportional beyond), nothing
// for the embedding or head, links of `alpha` seconds and no bandwidth cost, optimizer free.
// Measured with `ranks` ranks on the node (a plan for as many uses the times as they are).
Profile made_up(const Config& c, double alpha = 0, int ranks = 1) {
  Profile p;
  p.model = model_key(c);
  p.source = "made up";
  p.ranks_per_node = ranks;
  p.cores_per_node = 64;  // a core (device) per rank: no time-sharing
  for (int tp : {1, 2, 4}) {
    for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      for (bool sp : {false, true}) {
        if (sp && tp == 1) continue;
        ComputeTiming t;
        t.tp = tp, t.micro_batch = 1, t.recompute = r, t.sequence = sp;
        t.layer = {1e-3 / tp, 2e-3 / tp};
        if (r == Recompute::kFull) t.layer.backward += t.layer.forward;
        t.weight_share = 0.5;
        p.compute.push_back(t);
      }
    }
  }
  for (Collective op : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                        Collective::kSendRecv}) {
    p.links.push_back(LinkFit{op, 2, LinkClass::kNode, alpha, 0});
  }
  return p;
}

Candidate find(const std::vector<Candidate>& all, const std::string& name) {
  for (const Candidate& c : all) {
    if (c.describe() == name) return c;
  }
  FAIL("no candidate " << name);
  return {};
}

Prediction predicted(const Config& config, const Candidate& c, const Profile& profile, int world,
                     int nodes = 1) {
  const RunPlan plan = plan_run(c.applied(config), world, DataCheck::kSkip);
  return predict(plan, c, profile, PlanTopology{world, nodes});
}

}  // namespace

TEST_CASE("enumeration lists every layout the run accepts, and only those", "[planner]") {
  const Config c = tiny();  // 4 heads, 4 layers, global batch 16, AdamW
  const std::vector<Candidate> all = enumerate_candidates(c, 8, 1);
  REQUIRE(!all.empty());
  std::set<std::string> names;
  for (const Candidate& k : all) {
    INFO(k.describe());
    CHECK(k.dp * k.cp * k.tp * k.pp == 8);
    CHECK(c.model.heads % k.tp == 0);
    CHECK(k.pp <= c.model.layers);
    CHECK(k.micro_batch * k.microbatches * k.dp == c.train.global_batch);
    CHECK((k.sharded() ? k.dp * k.cp > 1 : true));  // ZeRO splits over dp x cp
    CHECK((k.sequence ? k.tp > 1 : true));
    CHECK((k.schedule == ScheduleKind::kInterleaved ? k.microbatches % k.pp == 0 : true));
    CHECK((k.pp == 1 ? k.schedule == ScheduleKind::k1F1B : true));
    CHECK_NOTHROW(plan_run(k.applied(c), 8, DataCheck::kSkip));
    names.insert(k.describe());
  }
  CHECK(names.size() == all.size());  // no duplicates
  // Known members, and a layout the rules refuse (tp 8 > 4 heads) absent.
  CHECK(names.count("dp8 tp1 pp1 b2x1 none"));
  CHECK(names.count("dp2 tp2 pp2 zbvx2 b1x8 full sp"));
  CHECK(names.count("dp4 tp1 pp2 interleavedx2 b2x2 selective zero1"));
  // Two chunks per rank need 2 x pp layers: none at pp 4 (4 layers).
  for (const Candidate& k : all) CHECK((k.pp == 4 ? k.chunks == 1 : true));
  for (const std::string& n : names) CHECK(n.find("tp8") == std::string::npos);
  // The count by hand for (dp, tp, pp) = (8, 1, 1): micro-batches 1, 2; 3 recompute modes;
  // unsharded, ZeRO-1, ZeRO-2 and ZeRO-3: 24.
  int flat = 0;
  for (const Candidate& k : all) flat += k.dp == 8;
  CHECK(flat == 24);
  CHECK(names.count("dp8 tp1 pp1 b2x1 none zero2"));
  CHECK(names.count("dp8 tp1 pp1 b2x1 none zero3"));
}

TEST_CASE("interleaved schedules come with 2, 4 and 8 virtual stages where layers allow",
          "[planner]") {
  Config c = tiny();
  c.model.layers = 16;
  std::set<int> at2, at4;
  for (const Candidate& k : enumerate_candidates(c, 4, 1)) {
    if (k.schedule != ScheduleKind::kInterleaved) continue;
    (k.pp == 2 ? at2 : at4).insert(k.chunks);
  }
  CHECK(at2 == std::set<int>{2, 4, 8});  // 2 x 8 = 16 layers
  CHECK(at4 == std::set<int>{2, 4});     // 4 x 8 > 16
}

TEST_CASE("enumeration keeps a resumed checkpoint's tp, pp and placement", "[planner]") {
  PlanConstraints keep;
  keep.tp = 2, keep.pp = 2, keep.chunks = 2, keep.placement = PlacementShape::kV;
  const std::vector<Candidate> all = enumerate_candidates(tiny(), 8, 1, keep);
  REQUIRE(!all.empty());
  for (const Candidate& k : all) {
    CHECK(k.tp == 2);
    CHECK(k.pp == 2);
    CHECK(k.schedule == ScheduleKind::kZbv);
  }
  CHECK_THROWS_WITH(enumerate_candidates(tiny(), 8, 3), Contains("--nodes 3: does not divide"));
}

TEST_CASE("node-aware all-reduce is a choice only where dp groups span nodes", "[planner]") {
  int hier = 0, flat = 0, neither = 0;
  for (const Candidate& k : enumerate_candidates(tiny(), 8, 2)) {
    if (k.cp > 1) {
      // Gradients over dp x cp: flat, pinned where the replicas span the nodes (else auto).
      CHECK(k.hierarchical != Hierarchical::kTrue);
      continue;
    }
    if (k.hierarchical == Hierarchical::kTrue) ++hier;
    if (k.hierarchical == Hierarchical::kFalse) ++flat;
    if (k.hierarchical == Hierarchical::kAuto) ++neither;
    // dp 8 spans the 2 nodes with 4 ranks on each: always a choice; dp 2 never spans them.
    if (k.dp == 8) CHECK(k.hierarchical != Hierarchical::kAuto);
    if (k.dp == 2) CHECK(k.hierarchical == Hierarchical::kAuto);
  }
  CHECK(hier == flat);
  CHECK(hier > 0);
  CHECK(neither > 0);
}

TEST_CASE("parameter bytes are the parameters the model spec builds", "[planner]") {
  const Config base = tiny();
  const ModelSpec& spec = model_spec(base.model.arch);
  auto single = MpiCommunicator::self();
  for (const char* name : {"dp1 tp1 pp2 1f1b b4x4 none", "dp1 tp1 pp2 zbvx2 b4x4 none"}) {
    INFO(name);
    const std::vector<Candidate> all = enumerate_candidates(base, 2, 1);
    const Candidate k = find(all, name);
    const RunPlan plan = plan_run(k.applied(base), 2, DataCheck::kSkip);
    const Prediction p = predict(plan, k, made_up(base), PlanTopology{2, 1});
    for (int r = 0; r < 2; ++r) {
      double bytes = 0;
      for (int chunk = 0; chunk < plan.schedule.chunks; ++chunk) {
        auto built = spec.build_chunk(plan.config, plan.schedule.stage_of(r, chunk),
                                      plan.stage_layers, *single);
        for (const auto& t : built->module().parameters()) bytes += 4.0 * t.numel();
      }
      CHECK(p.memory[r].parameters == Approx(bytes).epsilon(1e-9));
      CHECK(p.memory[r].gradients == p.memory[r].parameters);
      CHECK(p.memory[r].optimizer == 2 * p.memory[r].parameters);  // AdamW's two moments
    }
  }
}

TEST_CASE("memory: ZeRO-1 shards the moments, the schedule sets micro-batches in flight",
          "[planner]") {
  const Config base = tiny();
  const Profile profile = made_up(base);
  const auto all = enumerate_candidates(base, 8, 1);
  const Prediction plain = predicted(base, find(all, "dp8 tp1 pp1 b2x1 none"), profile, 8);
  const Prediction zero = predicted(base, find(all, "dp8 tp1 pp1 b2x1 none zero1"), profile, 8);
  CHECK(zero.memory[0].optimizer == Approx(plain.memory[0].optimizer / 8));
  CHECK(zero.memory[0].gradients == Approx(plain.memory[0].gradients * (1 + 1.0 / 8)));
  // ZeRO-2: the slice, the gradients of buckets being filled (two of bucket_mb at most, and
  // never more than the whole gradient) and two buckets being sent; every micro-batch is
  // reduce-scattered.
  const Candidate zero2 = find(all, "dp8 tp1 pp1 b1x2 none zero2");
  const Prediction second = predicted(base, zero2, profile, 8);
  const double p = second.memory[0].parameters;
  CHECK(second.memory[0].optimizer == Approx(plain.memory[0].optimizer / 8));
  // The slice and what backward holds in flight: more than the slice alone; with buckets small
  // against the model, less than ZeRO-1's buckets and slice.
  CHECK(second.memory[0].gradients > p / 8);
  Config small_buckets = base;
  small_buckets.ddp.bucket_mb = 1e-4;
  const Prediction narrow = predicted(small_buckets, zero2, profile, 8);
  CHECK(narrow.memory[0].gradients < zero.memory[0].gradients);
  CHECK(zero2.overrides().find("--set ddp.shard=gradients --set optimizer.shard=false") !=
        std::string::npos);
  // bf16 working weights: half the weights' bytes, the fp32 master beside the moments (12 bytes
  // a parameter over the shards, not 8), the same fp32 gradients; never unsharded, and ZeRO-1
  // at dp 1 is their one-rank layout.
  Config bf16_compute = base;
  bf16_compute.train.precision = Precision::kBf16;
  Config bf16 = bf16_compute;
  bf16.train.param_dtype = Precision::kBf16;
  const Prediction fp32_weights = predicted(bf16_compute, zero2, profile, 8);
  const Prediction halved = predicted(bf16, zero2, profile, 8);
  CHECK(halved.memory[0].parameters == Approx(fp32_weights.memory[0].parameters / 2));
  CHECK(halved.memory[0].optimizer == Approx(fp32_weights.memory[0].optimizer * 1.5));
  CHECK(halved.memory[0].gradients == Approx(fp32_weights.memory[0].gradients));
  const auto bf16_all = enumerate_candidates(bf16, 8, 1);
  for (const Candidate& c : bf16_all) CHECK(c.shard != ShardLevel::kNone);
  CHECK(std::any_of(bf16_all.begin(), bf16_all.end(), [](const Candidate& c) {
    return c.dp == 1 && c.shard == ShardLevel::kOptimizer;
  }));
  // Two reduce-scatters a step instead of one (a link with latency: 1 ms per collective).
  const Profile latent = made_up(base, 1e-3);
  const Prediction one = predicted(base, find(all, "dp8 tp1 pp1 b1x2 none zero1"), latent, 8);
  CHECK(predicted(base, zero2, latent, 8).dp_comm > one.dp_comm);
  // Hybrid sharding in groups of 2: the moments and the gradient slice over 2, not 8. With one
  // group per node (2 nodes of 4), only the slices' all-reduce (a quarter of the gradient) crosses
  // the network: a cheaper sync than the flat ZeRO-1's over both nodes.
  Candidate hybrid = find(all, "dp8 tp1 pp1 b2x1 none zero1");
  hybrid.shard_group = 2;
  CHECK(hybrid.describe() == "dp8 tp1 pp1 b2x1 none zero1/2");
  CHECK(hybrid.overrides().find("--set optimizer.shard_group=2") != std::string::npos);
  // The configuration's group reaches the ZeRO-1 candidates whose dp it divides; every candidate's
  // command sets the key, so a YAML value never outlives the candidate's choice.
  Config grouped_base = base;
  grouped_base.optimizer.shard = true;
  grouped_base.optimizer.shard_group = 4;
  for (const Candidate& k : enumerate_candidates(grouped_base, 8, 1)) {
    INFO(k.describe());
    // (Not under cp: it shards over all of dp x cp.)
    CHECK(k.shard_group == (k.sharded() && k.cp == 1 && k.dp % 4 == 0 ? 4 : 0));
    CHECK(k.overrides().find(str("--set optimizer.shard_group=", k.shard_group)) !=
          std::string::npos);
  }
  const Prediction grouped = predicted(base, hybrid, profile, 8);
  CHECK(grouped.memory[0].optimizer == Approx(plain.memory[0].optimizer / 2));
  CHECK(grouped.memory[0].gradients == Approx(plain.memory[0].gradients * (1 + 1.0 / 2)));
  hybrid.shard_group = 4;  // one group per node
  const Prediction per_node = predicted(base, hybrid, profile, 8, /*nodes=*/2);
  const Prediction flat = predicted(base, find(all, "dp8 tp1 pp1 b2x1 none zero1"), profile, 8, 2);
  CHECK(per_node.dp_comm < flat.dp_comm);
  // Hybrid ZeRO-2 at 2 micro-batches: a reduce-scatter inside the node per micro-batch, the
  // slices' all-reduce across the nodes once a step. So it costs ZeRO-1's hybrid sync plus one
  // in-node reduce-scatter (a latency-only link: 1 ms per collective, no bytes term).
  Candidate zero1_nodes = find(all, "dp8 tp1 pp1 b1x2 none zero1");
  Candidate zero2_nodes = find(all, "dp8 tp1 pp1 b1x2 none zero2");
  zero1_nodes.shard_group = zero2_nodes.shard_group = 4;
  const double extra = predicted(base, zero2_nodes, latent, 8, 2).dp_comm -
                       predicted(base, zero1_nodes, latent, 8, 2).dp_comm;
  CHECK(extra == Approx(latent.link(Collective::kReduceScatter, 4, LinkClass::kNode).time(0)));

  CHECK(plain.memory[0].checkpoint_snapshot == 0);  // synchronous saves keep no copy

  // checkpoint.async: dp rank 0 holds a copy of its shard (parameters and the whole optimizer
  // state, gathered under ZeRO-1) while the next steps run.
  Config async = base;
  async.checkpoint.async = true;
  async.checkpoint.every = 10;
  for (const char* name : {"dp8 tp1 pp1 b2x1 none", "dp8 tp1 pp1 b2x1 none zero1"}) {
    const Prediction sync_p = predicted(base, find(all, name), profile, 8);
    const Prediction async_p = predicted(async, find(all, name), profile, 8);
    const RankMemory& m = async_p.memory[0];
    CHECK(m.checkpoint_snapshot == Approx(3 * m.parameters));  // AdamW: parameters + 2 moments
    CHECK(async_p.peak_bytes == Approx(sync_p.peak_bytes + 3 * m.parameters));
  }
  async.checkpoint.every = 0;  // no periodic saves: nothing to copy
  CHECK(predicted(async, find(all, "dp8 tp1 pp1 b2x1 none"), profile, 8)
            .memory[0]
            .checkpoint_snapshot == 0);

  // pp 4, 4 micro-batches (one layer a stage): GPipe keeps all 4 on every rank, 1F1B p - r on
  // rank r. Rank 0 sends each output on (held by the send till the step ends: the same bytes),
  // so both peak at 4 micro-batches; the last rank under 1F1B holds one micro-batch and the
  // input gradients it has sent back (3 of them when its last forward runs).
  const auto pp4 = enumerate_candidates(base, 4, 1);
  const Candidate gpipe_k = find(pp4, "dp1 tp1 pp4 gpipe b4x4 none");
  const Prediction gpipe = predicted(base, gpipe_k, profile, 4);
  const Prediction ofob = predicted(base, find(pp4, "dp1 tp1 pp4 1f1b b4x4 none"), profile, 4);
  for (int r = 0; r < 4; ++r) {
    CHECK(gpipe.memory[r].in_flight == 4);
    CHECK(ofob.memory[r].in_flight == 4 - r);
  }
  const RunPlan plan4 = plan_run(gpipe_k.applied(base), 4, DataCheck::kSkip);
  const ModelSpec& spec = model_spec(base.model.arch);
  const StageMemory first_stage = spec.memory(plan4.config, 1, 1, true, false);
  const StageMemory last_stage = spec.memory(plan4.config, 1, 1, false, true);
  const double last = last_stage.activation_bytes;
  double message = 4;
  for (int64_t d : plan4.activation_shape) message *= static_cast<double>(d);
  // Four micro-batches kept, and one backward's moment (softmax's gradient of the scores).
  const auto four = [](const StageMemory& m) {
    return 4 * (m.activation_bytes - m.transient_bytes) + m.transient_bytes;
  };
  CHECK(gpipe.memory[0].activations == Approx(four(first_stage)));
  CHECK(ofob.memory[0].activations == Approx(four(first_stage)));
  CHECK(gpipe.memory[3].activations == Approx(four(last_stage)));
  CHECK(ofob.memory[3].activations == Approx(last + 3 * message));
  // Full recompute's replayed block is held by one micro-batch at a time.
  const Prediction full = predicted(base, find(pp4, "dp1 tp1 pp4 gpipe b4x4 full"), profile, 4);
  const RunPlan plan =
      plan_run(find(pp4, "dp1 tp1 pp4 gpipe b4x4 full").applied(base), 4, DataCheck::kSkip);
  const StageMemory sm = spec.memory(plan.config, 1, 1, false, false);
  CHECK(sm.transient_bytes > 0);
  // Rank 1: 4 forwards (each output sent on), then the first backward's replay.
  CHECK(full.memory[1].activations ==
        Approx(4 * (sm.activation_bytes - sm.transient_bytes) + sm.transient_bytes));
  // ZB-H1 defers weight passes: a micro-batch between I and W holds its captured gradients too.
  const Prediction zb = predicted(base, find(pp4, "dp1 tp1 pp4 zbh1 b4x4 none"), profile, 4);
  CHECK(spec.memory(plan4.config, 1, 1, false, false).deferred_weight_bytes > 0);
  CHECK(zb.memory[3].activations > ofob.memory[3].activations);
}

TEST_CASE("step time: the simulated pipeline, then gradient sync and optimizer", "[planner]") {
  const Config base = tiny();
  // No pipeline: 16 samples as 4 micro-batches of 4 through 4 layers: 4 x 4 x (4 + 8) ms.
  const Profile profile = made_up(base);
  const auto one = enumerate_candidates(base, 1, 1);
  const Prediction flat = predicted(base, find(one, "dp1 tp1 pp1 b4x4 none"), profile, 1);
  CHECK(flat.step_seconds == Approx(4 * 4 * 12e-3));
  CHECK(flat.bubble == Approx(0).margin(1e-12));
  // 1F1B over 2 stages of 2 layers, 4 micro-batches of 4: (m + p - 1)(F + B) = 5 x 24 ms.
  const auto two = enumerate_candidates(base, 2, 1);
  const Prediction piped =
      predicted(base, find(two, "dp1 tp1 pp2 1f1b b4x4 none"), made_up(base, 0, 2), 2);
  CHECK(piped.step_seconds == Approx(5 * 24e-3));
  CHECK(piped.compute == Approx(4 * 24e-3));
  CHECK(piped.bubble == Approx(24e-3));
  CHECK(piped.bound() == "compute");
  // dp 2 adds one all-reduce of the gradients: alpha (ring steps 2(n-1) at n = 2, as measured).
  const Profile slow = made_up(base, 5e-3, 2);
  const Prediction dp = predicted(base, find(two, "dp2 tp1 pp1 b8x1 none"), slow, 2);
  CHECK(dp.dp_comm == Approx(5e-3));
  CHECK(dp.step_seconds == Approx(4 * 24e-3 + 5e-3));
  // ZeRO-1: reduce-scatter, then the parameters' all-gather.
  const Prediction z = predicted(base, find(two, "dp2 tp1 pp1 b8x1 none zero1"), slow, 2);
  CHECK(z.dp_comm == Approx(10e-3));
  // Full recompute adds a forward to each backward: 4 x 4 x (4 + 12) ms.
  const Prediction full = predicted(base, find(one, "dp1 tp1 pp1 b4x4 full"), profile, 1);
  CHECK(full.step_seconds == Approx(4 * 4 * 16e-3));
  // Calibrated with one rank on the node, planned with two: they share its cores, twice the time.
  CHECK(predicted(base, find(two, "dp2 tp1 pp1 b8x1 none"), profile, 2).compute ==
        Approx(2 * 4 * 24e-3));
}

TEST_CASE(
    "a pipeline on shared cores: rate 1 is the plain simulation, one core does all the "
    "work without idling",
    "[planner]") {
  for (const char* name : {"gpipe", "1f1b", "zbh1"}) {
    INFO(name);
    const Schedule s = make_schedule(name, 4, 8, 1);
    SimulationCosts costs;
    costs.per_rank = {{1, 2, 1.2, 0.8}, {1.5, 3, 2, 1}, {1, 2, 1, 1}, {2, 3, 2, 1}};
    const SimulationResult plain = simulate(s, costs);
    const SimulationResult one = simulate_shared(s, costs, [](int) { return 1.0; });
    CHECK(one.finished);
    CHECK(one.makespan == Approx(plain.makespan));
    CHECK(one.peak_activations == plain.peak_activations);
    const SimulationResult core = simulate_shared(s, costs, [](int k) { return 1.0 / k; });
    double work = 0;
    for (double b : plain.busy) work += b;
    CHECK(core.makespan == Approx(work));
  }
}

TEST_CASE("the plan ranks by step time and drops what does not fit", "[planner]") {
  const Config base = tiny();
  const Profile profile = made_up(base, 1e-3);
  PlanRequest request;
  request.world = 4;
  const LayoutPlan all = plan_layouts(base, request, profile);
  REQUIRE(all.rows.size() == static_cast<size_t>(all.candidates));
  for (size_t i = 1; i < all.rows.size(); ++i) {
    CHECK(all.rows[i - 1].prediction.step_seconds <= all.rows[i].prediction.step_seconds);
  }
  // A limit between the smallest and the largest peak drops exactly the rows above it.
  double low = 1e300, high = 0;
  for (const PlanRow& r : all.rows) {
    low = std::min(low, r.prediction.peak_bytes), high = std::max(high, r.prediction.peak_bytes);
  }
  request.memory_per_rank = (low + high) / 2;
  const LayoutPlan fitting = plan_layouts(base, request, profile);
  int above = 0;
  for (const PlanRow& r : all.rows) above += r.prediction.peak_bytes > request.memory_per_rank;
  CHECK(fitting.too_big == above);
  CHECK(fitting.rows.size() + static_cast<size_t>(above) == all.rows.size());
  for (const PlanRow& r : fitting.rows) CHECK(r.prediction.peak_bytes <= request.memory_per_rank);
  CHECK_THAT(fitting.table(base, request, 5),
             Contains("too big for the memory") && Contains("rank  layout"));
  CHECK_THAT(fitting.recommendation("x.yaml"),
             Contains("recommended: " + fitting.rows[0].candidate.describe()) &&
                 Contains("run: triax train x.yaml --set parallel.tensor="));
  // The CSV the accuracy benchmark reads: a header and one line per ranked row, first row first.
  const std::string csv = fitting.csv();
  CHECK(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')) == fitting.rows.size() + 1);
  CHECK_THAT(csv, Contains("rank,layout,overrides,step_s") &&
                      Contains("\n1," + fitting.rows[0].candidate.describe() + ",--set "));
  request.memory_per_rank = low / 2;
  CHECK_THROWS_WITH(plan_layouts(base, request, profile),
                    Contains("fits in") && Contains("all too big") && Contains("valid:"));
  // A profile for another model shape is refused, naming both.
  Profile other = profile;
  other.model = "gpt h999";
  request.memory_per_rank = 0;
  CHECK_THROWS_WITH(plan_layouts(base, request, other),
                    Contains("'gpt h999'") && Contains(model_key(base)));
}

TEST_CASE("parallel: auto chooses the plan's first row, the same each time", "[planner]") {
  Config base = tiny();
  const LayoutChoice a = choose_layout(base, 4, 1);
  const LayoutChoice b = choose_layout(base, 4, 1);
  CHECK(to_yaml(a.config) == to_yaml(b.config));
  PlanRequest request;
  request.world = 4;
  const LayoutPlan plan = plan_layouts(base, request, nominal_profile(base));
  CHECK(to_yaml(a.config) == to_yaml(plan.rows[0].candidate.applied(base)));
  CHECK_THAT(a.message, Contains("parallel: auto chose " + plan.rows[0].candidate.describe()) &&
                            Contains("runner-up " + plan.rows[1].candidate.describe()));
  // The short form in YAML.
  const Config parsed = parse_config("model: {arch: gpt}\nparallel: auto\n");
  CHECK(parsed.parallel.automatic);
  PlanConstraints keep;
  keep.tp = 2, keep.pp = 1, keep.reason = "the checkpoint's";
  const LayoutChoice kept = choose_layout(base, 4, 1, keep);
  CHECK(kept.config.parallel.tensor == 2);
  CHECK(kept.config.parallel.pipeline == 1);
}

TEST_CASE("the profile file round-trips and names what is wrong", "[planner]") {
  const Config base = tiny();
  Profile p = made_up(base, 2e-5);
  p.optimizer_per_parameter = 1.5e-9;
  p.base_bytes = 123456789;
  p.wait_share = 0.25;
  p.op_seconds = 7e-6;
  p.sync_seconds = 3e-4;
  const std::string path =
      (std::filesystem::temp_directory_path() / "triax_profile_test.yaml").string();
  p.write(path);
  const Profile q = Profile::read(path);
  CHECK(q.to_yaml() == p.to_yaml());
  CHECK(q.wait_share == 0.25);  // (read back: it was written and then ignored)
  CHECK(q.op_seconds == 7e-6);
  CHECK(q.sync_seconds == 3e-4);
  CHECK(q.compute.size() == p.compute.size());
  CHECK(q.links.size() == p.links.size());
  const auto rewrite = [&](const std::string& from, const std::string& to) {
    std::string text = p.to_yaml();
    const size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    std::ofstream(path) << text;
  };
  rewrite("triax_profile: 1", "triax_profile: 7");
  CHECK_THROWS_WITH(Profile::read(path), Contains(path) && Contains("unknown format version"));
  rewrite("recompute: none", "recompute: most");
  CHECK_THROWS_WITH(Profile::read(path),
                    Contains("compute[0]") && Contains("'recompute' is not none"));
  rewrite("op: all_reduce", "op: all_to_all");
  CHECK_THROWS_WITH(Profile::read(path), Contains("links[0]") && Contains("'all_to_all'"));
  rewrite("beta: 0}", "beta: -1}");
  CHECK_THROWS_WITH(Profile::read(path),
                    Contains("links[0]") && Contains("'beta' is -1, not >= 0"));
  std::ofstream(path) << "[1, 2";
  CHECK_THROWS_WITH(Profile::read(path), Contains("not YAML"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(Profile::read(path), Contains("cannot read the profile"));
}

TEST_CASE("profile lookups interpolate micro-batches and scale tp and group sizes", "[planner]") {
  const Config base = tiny();
  Profile p = made_up(base);
  ComputeTiming four = p.compute[0];  // tp 1, none
  four.micro_batch = 4;
  four.layer = {2e-3, 6e-3};
  p.compute.push_back(four);
  const ComputeTiming mid = p.timing(1, 2, Recompute::kNone, false);
  CHECK(mid.layer.forward == Approx(1e-3 + (2e-3 - 1e-3) / 3));  // linear between b 1 and 4
  CHECK(p.timing(1, 8, Recompute::kNone, false).layer.backward == Approx(12e-3));    // beyond: x b
  CHECK(p.timing(8, 1, Recompute::kNone, false).layer.forward == Approx(1e-3 / 8));  // FLOP share
  LinkFit f{Collective::kAllReduce, 2, LinkClass::kNode, 1e-5, 1e-9};
  p.links = {f};
  const LinkFit at8 = p.link(Collective::kAllReduce, 8, LinkClass::kNode);
  CHECK(at8.alpha == Approx(1e-5 * 14 / 2));           // ring steps 2(n-1)
  CHECK(at8.beta == Approx(1e-9 * (14.0 / 8) / 1.0));  // bytes per rank 2(n-1)/n
  const LinkFit net = p.link(Collective::kAllReduce, 2, LinkClass::kNet);  // not measured
  CHECK(net.beta >= 1.0 / 1e9);
  CHECK_THROWS_WITH(Profile().timing(1, 1, Recompute::kFull, false),
                    Contains("no compute timing for recompute full"));
}

TEST_CASE("a dry run of one rank of 1024", "[planner]") {
  Config c = tiny();
  c.model.layers = 16;
  c.train.global_batch = 1024;
  c.train.micro_batch = 4;
  c.parallel.tensor = 4;
  c.parallel.pipeline = 8;
  const std::string text = dry_run(c, 1024, 128, 517, false, nominal_profile(c));
  // rank 517 = tp 1 + 4 (dp 1 + 32 pp 4) with tp-dp-pp: dp 1, tp 1, pp 4.
  CHECK_THAT(text, Contains("world 1024 = dp 32 x tp 4 x pp 8") &&
                       Contains("rank 517 of 1024 (node 64 of 128): dp 1, tp 1, pp 4") &&
                       Contains("tp group [516,517,518,519]") &&
                       Contains("more tp groups of 4 ranks") && Contains("--groups") &&
                       Contains("holds stage 4 layers [8,10)") && Contains("memory: parameters") &&
                       Contains("predicted step"));
  // The summary keeps the table short; --groups prints all 256 tp groups.
  CHECK(std::count(text.begin(), text.end(), '\n') < 40);
  const std::string full = dry_run(c, 1024, 128, 517, true, nominal_profile(c));
  CHECK_THAT(full, Contains("tp group 255: [1020,1021,1022,1023]"));
}

TEST_CASE("the Llama plans too, with its kv heads' rule", "[planner]") {
  Config c = testing::tiny_llama_config(1, 1, "1f1b", 1);
  c.train.micro_batch = 0;
  for (const Candidate& k : enumerate_candidates(c, 4, 1)) {
    const int64_t kv = c.model.kv_heads == 0 ? c.model.heads : c.model.kv_heads;
    CHECK(kv % k.tp == 0);
  }
  PlanRequest request;
  request.world = 4;
  CHECK_FALSE(plan_layouts(c, request, nominal_profile(c)).rows.empty());
}

TEST_CASE("train.micro_batch_invariant: a micro-batch is timed as its one-sample passes",
          "[planner]") {
  Config base = tiny();
  base.train.numerics = Numerics::kLayoutInvariant;
  Profile profile = made_up(base);
  // Micro-batches of 4 measured at twice one sample's time (batching pays), not four times.
  for (ComputeTiming t : std::vector<ComputeTiming>(profile.compute)) {
    t.micro_batch = 4;
    t.layer = {2 * t.layer.forward, 2 * t.layer.backward};
    profile.compute.push_back(t);
  }
  const Candidate k = find(enumerate_candidates(base, 1, 1), "dp1 tp1 pp1 b4x4 none");
  const Prediction batched = predicted(base, k, profile, 1);
  base.train.micro_batch_invariant = true;
  const Prediction per_sample = predicted(base, k, profile, 1);
  CHECK(batched.compute > 0);
  CHECK(per_sample.compute == Approx(2 * batched.compute).epsilon(1e-9));
}

TEST_CASE("context parallelism: cp sizes and modes the run accepts, for language models only",
          "[planner]") {
  const Config base = tiny();  // seq_len 8: cp 2 and 4 cut it into 2 cp chunks; 4 heads
  std::set<std::string> seen;
  for (const Candidate& k : enumerate_candidates(base, 8, 1)) {
    CHECK(k.dp * k.cp * k.tp * k.pp == 8);
    if (k.cp == 1) continue;
    CHECK(base.model.seq_len % (2 * k.cp) == 0);
    // All-to-all splits the heads over cp x tp; the ring only needs the split of the sequence.
    if (k.context_mode == ContextMode::kAllToAll) CHECK(base.model.heads % (k.cp * k.tp) == 0);
    seen.insert(str(k.cp, choice_name(k.context_mode), k.tp));
  }
  CHECK(seen.count("2ring1"));
  CHECK(seen.count("4ring1"));
  CHECK(seen.count("2all_to_all1"));
  CHECK(seen.count("4all_to_all1"));
  CHECK(seen.count("2all_to_all2"));
  CHECK_FALSE(seen.count("4all_to_all2"));  // 4 heads over 8
  CHECK_FALSE(seen.count("8ring1"));        // 8 positions in 16 chunks
  const Candidate ring = find(enumerate_candidates(base, 4, 1), "dp2 tp1 pp1 cp2 ring b8x1 none");
  CHECK_THAT(ring.overrides(),
             Contains("--set parallel.context=2 --set parallel.context_mode=ring"));
  // A configuration at cp 4 planned at cp 1 is set back to 1 (the overrides always name it).
  Config at4 = base;
  at4.parallel.context = 4;
  const Candidate flat = find(enumerate_candidates(at4, 4, 1), "dp4 tp1 pp1 b4x1 none");
  CHECK(flat.applied(at4).parallel.context == 1);
  CHECK_THAT(flat.overrides(), Contains("--set parallel.context=1"));
  // Layout-invariant numerics, dropout and the MLP refuse cp: none is offered.
  Config invariant = base;
  invariant.train.numerics = Numerics::kLayoutInvariant;
  Config dropout = base;
  dropout.model.dropout = 0.1;
  Config mlp = base;
  mlp.model.arch = ModelKind::kMlp;
  for (const Config& c : {invariant, dropout}) {
    const std::vector<Candidate> some = enumerate_candidates(c, 4, 1);
    CHECK_FALSE(some.empty());
    for (const Candidate& k : some) CHECK(k.cp == 1);
  }
  const std::vector<Candidate> mlps = enumerate_candidates(mlp, 4, 1);
  CHECK_FALSE(mlps.empty());
  CHECK(std::none_of(mlps.begin(), mlps.end(), [](const Candidate& k) { return k.cp > 1; }));
}

TEST_CASE(
    "context parallelism's prediction: compute by the attention each rank does, "
    "exchanges, and the gradient sync over dp x cp",
    "[planner]") {
  const Config base = tiny();
  const double alpha = 1e-3;                  // every collective 1 ms, no bandwidth term
  Profile profile = made_up(base, alpha, 2);  // measured with 2 ranks busy
  profile.op_seconds = 0;                     // FLOPs only (the operations' cost below)
  const std::vector<Candidate> all = enumerate_candidates(base, 2, 1);
  const Candidate one = find(all, "dp2 tp1 pp1 b8x1 none");
  const Candidate ring = find(all, "dp1 tp1 pp1 cp2 ring b16x1 none");
  const Candidate a2a = find(all, "dp1 tp1 pp1 cp2 a2a b16x1 none");
  const Prediction p1 = predicted(base, one, profile, 2);
  const Prediction pr = predicted(base, ring, profile, 2);
  const Prediction pa = predicted(base, a2a, profile, 2);
  // Attention's share of a layer, from the GPT's count written out: scores and sums 12 h s per
  // token against 6 x 12 h^2 of matmuls.
  const double h = 16, s = 8;
  const double f = 12 * h * s / (6 * 12 * h * h + 12 * h * s);
  // dp 2: 8 sequences of 4 layers at 1 + 2 ms each per sequence (the made-up profile).
  CHECK(p1.compute == Approx(8 * 4 * 3e-3));
  // cp 2: all 16 sequences, each half as long: the matmuls halve, the ring's attention computes
  // 5 of 16 chunk pairs of the whole, all-to-all's half of it.
  CHECK(pr.compute == Approx(16 * 4 * 3e-3 * ((1 - f) / 2 + f * 5 / 16)));
  CHECK(pa.compute == Approx(16 * 4 * 3e-3 / 2));
  // All-to-all: q, k, v and the output each way, per layer: 8 exchanges of 1 ms.
  CHECK(pa.cp_comm == Approx(8 * alpha * 4));
  // The ring: a block's 1 ms transfer against its step's attention (a fraction of a ms here).
  const double forward_step = 1e-3 * 16 * f * 5 / 16 / 2, backward_step = 2 * forward_step;
  CHECK(pr.cp_comm ==
        Approx(4 * ((alpha - forward_step) + (2 * alpha - backward_step) + alpha)).epsilon(1e-9));
  // Gradients are averaged over dp x cp = 2 ranks in both; nothing sends at dp 1 x cp 1.
  CHECK(pr.dp_comm == Approx(p1.dp_comm));
  const Prediction single =
      predicted(base, find(enumerate_candidates(base, 1, 1), "dp1 tp1 pp1 b16x1 none"), profile, 1);
  CHECK(single.dp_comm == 0);
  CHECK(pr.step_seconds ==
        Approx(pr.compute + pr.bubble + pr.dp_comm + pr.cp_comm + pr.optimizer + pr.overhead));
  // Each rank holds half of every sequence's activations; ZeRO-1 splits the state over dp x cp.
  // (The same 16 sequences on one rank: half of it, less where scores fall as 1/cp^2.)
  CHECK(pr.memory[0].activations <= 0.5 * single.memory[0].activations);
  CHECK(pr.memory[0].activations > 0.25 * single.memory[0].activations);
  // What the ring's many small operations cost: on this 8-position sequence, at 20 us each,
  // more than the FLOPs it saves, so dp ranks first (as measured on short sequences).
  profile.op_seconds = 20e-6;
  const Prediction slow = predicted(base, ring, profile, 2);
  CHECK(slow.compute > pr.compute);
  CHECK(slow.step_seconds > predicted(base, one, profile, 2).step_seconds);
  // Each exchange waits for the slower neighbour (the profile's skew): all-to-all's 8 a layer;
  // recompute runs attention's forward, and its 4 exchanges, again.
  profile.op_seconds = 0;
  profile.sync_seconds = 1e-4;
  CHECK(predicted(base, a2a, profile, 2).cp_comm == Approx(4 * 8 * (alpha + 1e-4)));
  const Candidate a2a_selective = find(all, "dp1 tp1 pp1 cp2 a2a b16x1 selective");
  CHECK(predicted(base, a2a_selective, profile, 2).cp_comm == Approx(4 * 12 * (alpha + 1e-4)));
  profile.sync_seconds = 0;
  const Candidate zero1 = find(all, "dp1 tp1 pp1 cp2 ring b16x1 none zero1");
  const Prediction pz = predicted(base, zero1, profile, 2);
  CHECK(pz.memory[0].optimizer == Approx(pr.memory[0].optimizer / 2));
}

TEST_CASE("the dry run predicts a context-parallel rank", "[planner]") {
  Config c = tiny();
  c.parallel.context = 2;
  c.train.micro_batch = 4;
  const std::string text = dry_run(c, 4, 1, 1, false, nominal_profile(c));
  CHECK_THAT(text, Contains("cp group") && Contains("predicted step"));
}
