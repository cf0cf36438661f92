// The planner for a GPU cluster not at hand (plan/gpu_model.h, plan/device_compute.h): the
// presets and device files, the model's kernel list checked against Megatron-LM's published
// FLOP count (an independent formula), the roofline worked by hand, the device's memory as the
// default limit, --explain, and Megatron-LM's Table 1 as a regression with the tolerance.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "models/model_spec.h"
#include "parallel/parallel_layout.h"
#include "plan/device_compute.h"
#include "plan/explain.h"
#include "plan/gpu_model.h"
#include "plan/plan_topology.h"
#include "plan/planner.h"
#include "plan/predict.h"
#include "plan/published_runs.h"
#include "support/tiny_gpt.h"
#include "train/run_plan.h"

using Catch::Contains;
using namespace triax;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

const char* kFullDevice =
    "name: lab-gpu\n"
    "bf16_tflops: 100\n"
    "fp32_tflops: 10\n"
    "memory_gib: 16\n"
    "memory_bandwidth_gbs: 1000\n"
    "node_bandwidth_gbs: 200\n"
    "net_bandwidth_gbs: 20\n"
    "gpus_per_node: 4\n";

// Sums the matmuls' FLOPs of a kernel list.
double matmul_flops(const std::vector<Kernel>& kernels) {
  double total = 0;
  for (const Kernel& k : kernels) total += k.flops();
  return total;
}

// A GPT of Megatron's shape, small enough to plan quickly.
Config gpt(int64_t hidden, int64_t heads, int64_t layers, int64_t seq, int64_t vocab) {
  Config c = testing::tiny_gpt_config(1, 1, "1f1b", 1);
  c.model.hidden = hidden, c.model.heads = heads, c.model.layers = layers;
  c.model.seq_len = seq, c.model.vocab = vocab;
  return c;
}

// The same trained in bf16 with `global_batch` (micro-batches the planner's choice).
Config bf16_gpt(int64_t hidden, int64_t heads, int64_t layers, int64_t seq, int64_t vocab,
                int64_t global_batch) {
  Config c = gpt(hidden, heads, layers, seq, vocab);
  c.train.precision = Precision::kBf16;
  c.train.global_batch = global_batch;
  c.train.micro_batch = 0;
  return c;
}

}  // namespace

TEST_CASE("device presets: datasheet figures under the names users type", "[gpu_planner]") {
  const GpuModel h100 = find_gpu("H100-SXM");
  CHECK(h100.name == "h100");
  CHECK(h100.bf16_flops == Approx(989.4e12));
  CHECK(h100.memory_bytes == Approx(80 * kGiB));
  CHECK(h100.gpus_per_node == 8);
  CHECK(find_gpu("a100").name == "a100-80gb");
  CHECK(find_gpu("a100-40gb").memory_bytes == Approx(40 * kGiB));
  CHECK(find_gpu("b200").bf16_flops > find_gpu("h200").bf16_flops);
  for (const GpuModel& d : gpu_presets()) {
    INFO(d.name);
    CHECK(!d.source.empty());
    CHECK(d.node_bandwidth > d.net_bandwidth);  // NVLink beats the network per GPU
  }
  CHECK(h100.reserve() == Approx(6 * kGiB));  // 2 GiB + 5% of 80 GiB
  CHECK_THROWS_WITH(find_gpu("v100"), Contains("--device v100: no such device preset or file") &&
                                          Contains("a100-40gb, a100-80gb, h100, h200, b200"));
}

TEST_CASE("a device file: every figure read; a missing, negative or non-numeric one named",
          "[gpu_planner]") {
  const std::string path = write_file("triax_device.yaml", std::string(kFullDevice) +
                                                               "net_latency_us: 20\n"
                                                               "reserve_gib: 1.5\n"
                                                               "matmul_efficiency: 0.5\n");
  const GpuModel d = find_gpu(path);
  CHECK(d.name == "lab-gpu");
  CHECK(d.bf16_flops == Approx(100e12));
  CHECK(d.memory_bytes == Approx(16 * kGiB));
  CHECK(d.net_bandwidth == Approx(20e9));
  CHECK(d.gpus_per_node == 4);
  CHECK(d.net_latency == Approx(20e-6));
  CHECK(d.reserve() == Approx(1.5 * kGiB));
  CHECK(d.matmul_efficiency == Approx(0.5));
  CHECK(d.memory_efficiency == Approx(GpuModel{}.memory_efficiency));  // not given: the default

  const auto broken = [&](const std::string& text) {
    return GpuModel::read(write_file("triax_device_bad.yaml", text));
  };
  // The full file with one key's line replaced.
  const auto with = [&](const std::string& key, const std::string& value) {
    std::string text = kFullDevice;
    const size_t at = text.find(key + ":");
    if (at == std::string::npos) return text + key + ": " + value + "\n";
    return text.replace(at, text.find('\n', at) - at, key + ": " + value);
  };
  std::string missing = kFullDevice;
  missing.erase(missing.find("memory_gib"), std::string("memory_gib: 16\n").size());
  CHECK_THROWS_WITH(broken(missing), Contains("triax_device_bad.yaml: 'memory_gib' is missing") &&
                                         Contains("valid: a device file with bf16_tflops"));
  CHECK_THROWS_WITH(broken(with("net_bandwidth_gbs", "-5")),
                    Contains("'net_bandwidth_gbs' is -5, must be > 0"));
  CHECK_THROWS_WITH(broken(with("fp32_tflops", "fast")),
                    Contains("'fp32_tflops' is 'fast', not a number"));
  CHECK_THROWS_WITH(broken(with("link_efficiency", "1.5")),
                    Contains("'link_efficiency' is 1.5, must be in (0, 1]"));
  CHECK_THROWS_WITH(broken(with("gpus_per_node", "2.5")),
                    Contains("'gpus_per_node' is 2.5, must be a whole number from 1 to 1024"));
  CHECK_THROWS_WITH(broken(std::string(kFullDevice) + "link_eficiency: 0.5\n"),
                    Contains("'link_eficiency' is not a device key (did you mean "
                             "'link_efficiency'?)"));
  CHECK_THROWS_WITH(broken(with("memory_gib", "[1, 2]")),
                    Contains("'memory_gib' is a list, not a number"));
  CHECK_THROWS_WITH(broken("[1, 2]\n"), Contains("not a mapping"));
  CHECK_THROWS_WITH(GpuModel::read("/nonexistent/device.yaml"),
                    Contains("/nonexistent/device.yaml: cannot read the device file"));
}

TEST_CASE("the kernel list's matmuls are Megatron-LM's FLOP count", "[gpu_planner]") {
  // Narayanan et al. (SC 2021), section 5.1: a GPT layer's forward is 24 B s h^2 + 4 B s^2 h
  // FLOPs and the head's 2 B s h V; a step with recompute is four forwards' worth of the layers
  // and three of the head (not recomputed): 96 B s l h^2 (1 + s / 6h + V / 16 l h). The kernel list
  // is written from the layers' shapes; the formula from the paper: they must agree exactly, and
  // the tp slices must add up.
  const double b = 2, s = 64, h = 96, l = 3, v = 500;
  Config c = gpt(96, 4, 3, 64, 500);
  const ModelSpec& spec = model_spec(ModelKind::kGpt);
  for (int tp : {1, 2, 4}) {
    INFO("tp " << tp);
    const StageKernels k = spec.kernels(c.model, KernelShape{tp, 2, false, 2});
    const double step = tp * (4 * l * matmul_flops(k.layer) + 3 * matmul_flops(k.last));
    CHECK(matmul_flops(k.first) == 0);  // the embedding is a gather
    CHECK(step ==
          Approx(96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h))).epsilon(1e-12));
  }
  // The Llama: grouped-query projections and SwiGLU's three matrices (2 s h (h + 2 kv d) for
  // q, k, v; 2 s h^2 the output; 3 x 2 s h w the MLP), attention as the GPT's.
  Config llama = c;
  llama.model.arch = ModelKind::kLlama;
  llama.model.kv_heads = 2;
  llama.model.intermediate_size = 256;
  llama.model.tie_embeddings = false;
  const double kv = 2 * (h / 4), w = 256;
  const StageKernels k = model_spec(ModelKind::kLlama).kernels(llama.model, KernelShape{2, 2});
  CHECK(2 * matmul_flops(k.layer) ==
        Approx(2 * b * s * (h * (h + 2 * kv) + h * h + 3 * h * w) + 4 * b * s * s * h)
            .epsilon(1e-12));
}

TEST_CASE("the roofline: a large matmul at the matmul peak, a skinny one and a norm at memory",
          "[gpu_planner]") {
  GpuModel d = GpuModel::read(write_file("triax_device.yaml", kFullDevice));
  d.matmul_efficiency = 0.5, d.memory_efficiency = 0.5, d.launch_seconds = 1e-6;
  // 100 TFLOP/s x 0.5 = 50 TFLOP/s; 1000 GB/s x 0.5 = 500 GB/s.
  Kernel big;
  big.m = 4096, big.n = 4096, big.k = 4096, big.weight = true;
  // 2 x 4096^3 = 137.4 GFLOP in 2.749 ms; its 3 x 4096^2 x 2 bytes = 100.7 MB take 0.201 ms.
  const KernelTime t = kernel_seconds(big, d, d.bf16_flops, 2);
  CHECK(t.forward == Approx(2 * std::pow(4096.0, 3) / 50e12 + 1e-6));
  CHECK(t.backward == Approx(2 * t.forward));
  CHECK(t.weight == Approx(t.forward));
  Kernel skinny;  // a matrix-vector product: 33.6 MFLOP but 33.6 MB to read
  skinny.m = 4096, skinny.n = 1, skinny.k = 4096;
  const KernelTime u = kernel_seconds(skinny, d, d.bf16_flops, 2);
  CHECK(u.forward == Approx(2 * (4096.0 * 4096 + 4096 + 4096) / 500e9 + 1e-6));
  CHECK(u.weight == 0);
  Kernel norm;
  norm.bytes = 1e6;
  const KernelTime n = kernel_seconds(norm, d, d.bf16_flops, 2);
  CHECK(n.forward == Approx(1e6 / 500e9 + 1e-6));
  CHECK(n.backward == Approx(2e6 / 500e9 + 1e-6));
}

TEST_CASE("a device profile: precision's peak, links per node and network, overlapped sync",
          "[gpu_planner]") {
  Config c = gpt(256, 8, 4, 128, 1000);
  const GpuModel h100 = find_gpu("h100");
  const Profile fp32 = device_profile(c, h100);
  c.train.precision = Precision::kBf16;
  const Profile bf16 = device_profile(c, h100);
  CHECK(fp32.peak_flops == Approx(66.9e12));
  CHECK(bf16.peak_flops == Approx(989.4e12));
  CHECK(bf16.message_element_bytes == 2);
  CHECK(bf16.overlaps_grad_sync);
  CHECK(bf16.base_bytes == Approx(h100.reserve()));
  const ComputeTiming slow = fp32.timing(1, 4, Recompute::kNone, false);
  const ComputeTiming fast = bf16.timing(1, 4, Recompute::kNone, false);
  CHECK(fast.layer.forward < slow.layer.forward);
  // Full recompute replays the forward in backward; tp 2 halves the matmuls.
  const ComputeTiming full = bf16.timing(1, 4, Recompute::kFull, false);
  CHECK(full.layer.backward == Approx(fast.layer.backward + fast.layer.forward));
  CHECK(bf16.timing(2, 4, Recompute::kNone, false).layer.forward < fast.layer.forward);
  // An all-reduce of 1 GB over 8 GPUs: 2 x 7/8 GB at 450 GB/s x link_efficiency in a node, 50
  // across (one rank per node: one NIC); with 4 ranks on each node it spans, 4 NICs at once.
  const double node = bf16.link(Collective::kAllReduce, 8, LinkClass::kNode).time(1e9);
  const double net = bf16.link(Collective::kAllReduce, 8, LinkClass::kNet).time(1e9);
  const double eta = h100.link_efficiency;
  CHECK(node == Approx(8.4e-6 + 14 * 3.4e-6 + 2 * 7.0 / 8 * 1e9 / (450e9 * eta)));
  CHECK(net == Approx(8.4e-6 + 14 * 14e-6 + 2 * 7.0 / 8 * 1e9 / (50e9 * eta)));
  const double rails = bf16.link(Collective::kAllReduce, 8, LinkClass::kNet, 4).time(1e9);
  CHECK(rails == Approx(8.4e-6 + 14 * 14e-6 + 2 * 7.0 / 8 * 1e9 / (4 * 50e9 * eta)));
}

TEST_CASE("on a device its memory is the limit; what does not fit is dropped with its need",
          "[gpu_planner]") {
  const Config c = bf16_gpt(512, 8, 8, 512, 8000, 64);
  GpuModel d = GpuModel::read(write_file("triax_device.yaml", kFullDevice));
  PlanRequest request;
  request.world = 8, request.nodes = 2;
  d.gpus_per_node = 4;
  request.memory_per_rank = d.memory_bytes;
  request.memory_source = "lab-gpu's memory";
  const Profile profile = device_profile(c, d);
  const LayoutPlan plan = plan_layouts(c, request, profile);
  REQUIRE(!plan.rows.empty());
  for (const PlanRow& row : plan.rows) {
    CHECK(row.prediction.peak_bytes + plan.base_bytes <= d.memory_bytes);
    CHECK(row.mfu > 0);
    CHECK(row.mfu < 1);
  }
  const std::string table = plan.table(c, request, 5);
  CHECK_THAT(table, Contains("16384 MiB per rank (lab-gpu's memory)") && Contains("MFU"));
  // A device of 3 GiB: its reserve (2 GiB + 5%) leaves too little for the larger layouts.
  d.memory_bytes = 3 * kGiB;
  request.memory_per_rank = d.memory_bytes;
  const LayoutPlan small = plan_layouts(c, request, device_profile(c, d));
  CHECK(small.too_big > 0);
  CHECK(small.smallest_too_big > request.memory_per_rank);
  CHECK_THAT(small.table(c, request, 5), Contains("too big for the memory (the smallest needs"));
  d.memory_bytes = 2.1 * kGiB;
  request.memory_per_rank = d.memory_bytes;
  CHECK_THROWS_WITH(plan_layouts(c, request, device_profile(c, d)),
                    Contains("no layout of 8 layers on 8 ranks fits in 2150 MiB per rank") &&
                        Contains("all too big, the smallest needing"));

  // --explain: the kernels on the roofline, the step's sum, MFU's arithmetic, memory by part.
  const std::string why = explain_row(c, request, plan, 1, profile, &d);
  CHECK_THAT(why, Contains("qkv") && Contains("MFU") && Contains("scores"));
  CHECK_THROWS_WITH(explain_row(c, request, plan, 100000, profile, &d), Contains("--explain"));
}

TEST_CASE("Megatron-LM's Table 1: predicted TFLOP/s per GPU within 10% on every row, 7% mean",
          "[published]") {
  // The regression of docs/plan.md's validation table (tools/bench/published_runs.cpp prints it).
  double total = 0;
  const GpuModel a100 = find_gpu("a100-80gb");
  for (const PublishedRun& run : megatron_table1()) {
    const RunCheck check = check_published_run(run, a100);
    INFO(run.name << ": predicted " << check.predicted_tflops_per_gpu << " TFLOP/s, published "
                  << run.tflops_per_gpu);
    CHECK(std::fabs(check.error) <= 0.10);
    total += std::fabs(check.error);
  }
  CHECK(total / static_cast<double>(megatron_table1().size()) <= 0.07);
}

TEST_CASE("Megatron-LM's layout comparisons: the predictions order layouts as its figures do",
          "[published]") {
  const GpuModel a100 = find_gpu("a100-80gb");
  for (const PublishedComparison& comparison : megatron_comparisons()) {
    std::vector<double> tflops;
    std::string seen;
    for (const PublishedRun& run : comparison.runs) {
      tflops.push_back(check_published_run(run, a100).predicted_tflops_per_gpu);
      seen += " " + std::to_string(tflops.back());
    }
    INFO(comparison.figure << ": " << comparison.claim << "; predicted" << seen);
    if (std::string(comparison.figure) == "Figure 13, batch 128") {
      // The known miss (docs/plan.md, "Known errors"): tp 4 x pp 16 is predicted 0.6% above the
      // paper's best, tp 8 x pp 8. Bounded here so that it cannot grow unnoticed.
      CHECK(tflops[2] >= 0.99 * *std::max_element(tflops.begin(), tflops.end()));
      continue;
    }
    CHECK(comparison.holds(tflops));
  }
}

TEST_CASE("the plan is the same on one thread and on several, with and without shared parts",
          "[gpu_planner]") {
  // plan_layouts plans (tp, pp) pairs on threads and shares simulations between candidates
  // (PredictCache): neither may change a figure.
  const Config c = bf16_gpt(256, 8, 8, 256, 1000, 32);
  const Profile profile = device_profile(c, find_gpu("h100"));
  PlanRequest request;
  request.world = 16, request.nodes = 2;
  request.threads = 1;
  const LayoutPlan one = plan_layouts(c, request, profile);
  request.threads = 4;
  const LayoutPlan four = plan_layouts(c, request, profile);
  REQUIRE(one.rows.size() == four.rows.size());
  REQUIRE(one.rows.size() > 100);
  for (size_t i = 0; i < one.rows.size(); ++i) {
    REQUIRE(one.rows[i].candidate.describe() == four.rows[i].candidate.describe());
    REQUIRE(one.rows[i].prediction.step_seconds == four.rows[i].prediction.step_seconds);
    REQUIRE(one.rows[i].prediction.peak_bytes == four.rows[i].prediction.peak_bytes);
  }
  // Each row predicted alone, without the shared parts, gives the same figures.
  const PlanTopology topology(16, 2);
  for (size_t i = 0; i < one.rows.size(); i += 7) {
    const Candidate& k = one.rows[i].candidate;
    const RunPlan run = plan_run(k.applied(c), 16, DataCheck::kSkip);
    const Prediction alone = predict(run, k, profile, topology);
    INFO(k.describe());
    CHECK(alone.step_seconds == one.rows[i].prediction.step_seconds);
    CHECK(alone.peak_bytes == one.rows[i].prediction.peak_bytes);
  }
}

TEST_CASE("a rank's group along an axis is that axis's group holding it", "[gpu_planner]") {
  // ParallelLayout::group_of builds one group in O(group); groups() builds all of them.
  for (const char* order : {"tp-cp-dp-pp", "pp-dp-tp-cp", "dp-tp-cp-pp"}) {
    const ParallelLayout layout = ParallelLayout::create(48, 2, 3, order, 2);
    for (Axis axis : {Axis::kDp, Axis::kTp, Axis::kPp, Axis::kCp}) {
      for (const auto& group : layout.groups(axis)) {
        for (int rank : group) {
          INFO(order << " rank " << rank);
          CHECK(layout.group_of(axis, rank) == group);
        }
      }
    }
  }
}
