#include "plan/profile.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/strings.h"
#include "models/model_spec.h"
#include "models/stage_balance.h"

namespace triax {

const char* collective_name(Collective op) {
  switch (op) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kSendRecv:
      return "send_recv";
  }
  return "?";
}

const char* link_name(LinkClass link) {
  return link == LinkClass::kNode ? "node" : "net";
}

double ring_steps(Collective op, int n) {
  if (op == Collective::kSendRecv) return 1;
  return (op == Collective::kAllReduce ? 2.0 : 1.0) * (n - 1);
}

double ring_bytes(Collective op, int n) {
  if (op == Collective::kSendRecv) return 1;
  return ring_steps(op, n) / n;
}

namespace {

constexpr Collective kCollectives[] = {Collective::kAllReduce, Collective::kAllGather,
                                       Collective::kReduceScatter, Collective::kSendRecv};

PassTime scaled(const PassTime& t, double f) {
  return {t.forward * f, t.backward * f};
}
PassTime mix(const PassTime& a, const PassTime& b, double w) {  // (1-w) a + w b
  return {a.forward + w * (b.forward - a.forward), a.backward + w * (b.backward - a.backward)};
}

}  // namespace

ComputeTiming Profile::timing(int tp, int64_t micro_batch, Recompute recompute,
                              bool sequence) const {
  if (analytic) return analytic(tp, micro_batch, recompute, sequence);
  const bool sp = sequence && tp > 1;
  // The measured tp nearest (in log2) to the one asked for, among rows of this mode.
  int best_tp = -1;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const ComputeTiming& row : compute) {
    if (row.recompute != recompute || (row.sequence && row.tp > 1) != (sp && row.tp > 1)) continue;
    if (sp && row.tp == 1) continue;
    const double distance = std::abs(std::log2(row.tp) - std::log2(tp));
    if (distance < best_distance) best_distance = distance, best_tp = row.tp;
  }
  if (best_tp < 0) {
    throw ConfigError(str("profile ", source, " has no compute timing for recompute ",
                          choice_name(recompute), sp ? " with sequence parallelism" : "",
                          " (run triax calibrate again)"));
  }
  std::vector<const ComputeTiming*> rows;
  for (const ComputeTiming& row : compute) {
    if (row.tp == best_tp && row.recompute == recompute && (row.sequence && row.tp > 1) == sp) {
      rows.push_back(&row);
    }
  }
  std::sort(rows.begin(), rows.end(),
            [](auto* a, auto* b) { return a->micro_batch < b->micro_batch; });
  ComputeTiming out = *rows.front();
  const double b = static_cast<double>(micro_batch);
  const auto at = [](const ComputeTiming& r, double f) {
    ComputeTiming t = r;
    t.layer = scaled(r.layer, f), t.first = scaled(r.first, f), t.last = scaled(r.last, f);
    return t;
  };
  if (micro_batch <= rows.front()->micro_batch) {
    out = at(*rows.front(), b / static_cast<double>(rows.front()->micro_batch));
  } else if (micro_batch >= rows.back()->micro_batch) {
    out = at(*rows.back(), b / static_cast<double>(rows.back()->micro_batch));
  } else {
    for (size_t i = 0; i + 1 < rows.size(); ++i) {
      const auto& lo = *rows[i];
      const auto& hi = *rows[i + 1];
      if (micro_batch < lo.micro_batch || micro_batch > hi.micro_batch) continue;
      const double w = (b - static_cast<double>(lo.micro_batch)) /
                       static_cast<double>(hi.micro_batch - lo.micro_batch);
      out = lo;
      out.layer = mix(lo.layer, hi.layer, w);
      out.first = mix(lo.first, hi.first, w);
      out.last = mix(lo.last, hi.last, w);
      out.weight_share = lo.weight_share + w * (hi.weight_share - lo.weight_share);
      break;
    }
  }
  if (best_tp != tp) {  // not measured: the FLOP share of each rank scales with 1/tp
    const double f = static_cast<double>(best_tp) / tp;
    out.layer = scaled(out.layer, f);
    out.first = scaled(out.first, f);
    out.last = scaled(out.last, f);
  }
  out.tp = tp;
  out.micro_batch = micro_batch;
  out.sequence = sp;
  return out;
}

bool Profile::has_link(LinkClass link) const {
  return std::any_of(links.begin(), links.end(), [&](const LinkFit& f) { return f.link == link; });
}

LinkFit Profile::link(Collective op, int group, LinkClass link_class, int per_node) const {
  if (group <= 1) return LinkFit{op, group, link_class, 0, 0};
  const int rails = std::min(per_node, net_rails);
  if (link_class == LinkClass::kNet && rails > 1) {
    LinkFit out = link(op, group, link_class);
    out.beta = std::max(out.beta / rails, link(op, group, LinkClass::kNode).beta);
    return out;
  }
  const LinkClass use = has_link(link_class) ? link_class : LinkClass::kNode;
  const LinkFit* best = nullptr;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const LinkFit& f : links) {
    if (f.op != op || f.link != use) continue;
    const double distance = std::abs(std::log2(f.group) - std::log2(group));
    if (distance < best_distance) best_distance = distance, best = &f;
  }
  LinkFit out{op, group, link_class, 5e-6, 1.0 / 5e9};
  if (best) {
    out.alpha = best->alpha * ring_steps(op, group) / ring_steps(op, best->group);
    out.beta = best->beta * ring_bytes(op, group) / ring_bytes(op, best->group);
  }
  if (use != link_class) {  // nominal network figures over the measured shared-memory ones
    out.alpha = std::max(out.alpha, 50e-6 * ring_steps(op, group));
    out.beta = std::max(out.beta, ring_bytes(op, group) / 1e9);
  }
  return out;
}

std::string model_key(const Config& c) {
  const ModelConfig& m = c.model;
  return str(choice_name(m.arch), model_spec(m.arch).profile_terms(m), " s", m.seq_len, " V",
             m.vocab, " ", choice_name(c.train.precision));
}

Profile nominal_profile(const Config& config, double flops_per_second) {
  if (flops_per_second <= 0) {
    // A device's datasheet peak when the configuration names one, at a typical 40% of it.
    flops_per_second = config.run.peak_tflops > 0 ? 0.4e12 * config.run.peak_tflops : 20e9;
  }
  Profile p;
  p.model = model_key(config);
  p.source = str("nominal (", flops_per_second / 1e9,
                 " GFLOP/s per rank, 20 us per layer pass; no profile: `triax calibrate`)");
  p.nominal = true;
  p.optimizer_per_parameter = 16.0 / 10e9;  // AdamW reads and writes ~16 bytes per parameter
  const ModelSpec& spec = model_spec(config.model.arch);
  const StageCosts costs = stage_costs(config.model, spec.flops_per_unit);
  const double tokens = static_cast<double>(spec.units_per_sample(config.model));
  for (int tp = 1; tp <= 1024; tp *= 2) {
    for (Recompute mode : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
      for (bool sp : {false, true}) {
        if (sp && tp == 1) continue;
        ComputeTiming t;
        t.tp = tp, t.micro_batch = 1, t.recompute = mode, t.sequence = sp;
        // Forward 1/3, backward 2/3 of training FLOPs, each pass also paying a fixed cost
        // (launching its operations), which makes tiny micro-batches inefficient as they are.
        constexpr double kPassOverhead = 20e-6;
        const auto pass = [&](double flops) {
          return PassTime{flops * tokens / tp / flops_per_second / 3 + kPassOverhead,
                          2 * flops * tokens / tp / flops_per_second / 3 + 2 * kPassOverhead};
        };
        for (int64_t b : {1, 1 << 20}) {  // the fixed cost stays, the rest grows with b
          const double n = static_cast<double>(b);
          t.micro_batch = b;
          t.layer = pass(n * costs.layer), t.first = pass(n * costs.first);
          t.last = pass(n * costs.last);
          if (mode == Recompute::kFull) t.layer.backward += t.layer.forward;
          if (mode == Recompute::kSelective) t.layer.backward += 0.1 * t.layer.forward;
          p.compute.push_back(t);
        }
      }
    }
  }
  for (Collective op : kCollectives) {
    for (LinkClass link : {LinkClass::kNode, LinkClass::kNet}) {
      const double alpha = link == LinkClass::kNode ? 5e-6 : 50e-6;
      const double bandwidth = link == LinkClass::kNode ? 5e9 : 1e9;
      p.links.push_back(
          LinkFit{op, 2, link, alpha * ring_steps(op, 2), ring_bytes(op, 2) / bandwidth});
    }
  }
  return p;
}

// ---- the file -------------------------------------------------------------------------------

namespace {

YAML::Node pass_node(const PassTime& t) {
  YAML::Node n(YAML::NodeType::Sequence);
  n.SetStyle(YAML::EmitterStyle::Flow);
  n.push_back(t.forward);
  n.push_back(t.backward);
  return n;
}

struct Reader {
  std::string path;
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw ConfigError(
        str(path, ": ", where, ": ", what, " (valid: a profile written by `triax calibrate`)"));
  }
  template <typename T>
  T get(const YAML::Node& node, const std::string& key, const std::string& where) const {
    const YAML::Node v = node[key];
    if (!v.IsDefined() || !v.IsScalar()) fail(where, str("'", key, "' is missing or not a value"));
    try {
      return v.as<T>();
    } catch (const YAML::Exception&) {
      fail(where, str("'", key, "' is '", v.Scalar(), "', not a number"));
    }
  }
  double positive_or_zero(double x, const std::string& where, const std::string& key) const {
    if (!(x >= 0) || !std::isfinite(x)) fail(where, str("'", key, "' is ", x, ", not >= 0"));
    return x;
  }
  PassTime pass(const YAML::Node& node, const std::string& key, const std::string& where) const {
    const YAML::Node v = node[key];
    if (!v.IsSequence() || v.size() != 2)
      fail(where, str("'", key, "' is not [forward, backward]"));
    PassTime t;
    try {
      t = {v[0].as<double>(), v[1].as<double>()};
    } catch (const YAML::Exception&) {
      fail(where, str("'", key, "' holds something other than two numbers"));
    }
    positive_or_zero(t.forward, where, key);
    positive_or_zero(t.backward, where, key);
    return t;
  }
};

}  // namespace

std::string Profile::to_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "triax_profile" << YAML::Value << 1;
  out << YAML::Key << "model" << YAML::Value << model;
  out << YAML::Key << "source" << YAML::Value << source;
  out << YAML::Key << "ranks_per_node" << YAML::Value << ranks_per_node;
  out << YAML::Key << "cores_per_node" << YAML::Value << cores_per_node;
  out << YAML::Key << "threads_per_rank" << YAML::Value << threads_per_rank;
  out << YAML::Key << "optimizer_per_parameter" << YAML::Value << optimizer_per_parameter;
  out << YAML::Key << "step_overhead" << YAML::Value << step_overhead;
  out << YAML::Key << "base_bytes" << YAML::Value << base_bytes;
  out << YAML::Key << "wait_share" << YAML::Value << wait_share;
  out << YAML::Key << "op_seconds" << YAML::Value << op_seconds;
  out << YAML::Key << "sync_seconds" << YAML::Value << sync_seconds;
  out << YAML::Key << "compute" << YAML::Value << YAML::BeginSeq;
  for (const ComputeTiming& t : compute) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "tp" << YAML::Value << t.tp;
    out << YAML::Key << "micro_batch" << YAML::Value << t.micro_batch;
    out << YAML::Key << "recompute" << YAML::Value << choice_name(t.recompute);
    out << YAML::Key << "sequence" << YAML::Value << t.sequence;
    out << YAML::Key << "layer" << YAML::Value << pass_node(t.layer);
    out << YAML::Key << "first" << YAML::Value << pass_node(t.first);
    out << YAML::Key << "last" << YAML::Value << pass_node(t.last);
    out << YAML::Key << "weight_share" << YAML::Value << t.weight_share;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "links" << YAML::Value << YAML::BeginSeq;
  for (const LinkFit& f : links) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "op" << YAML::Value << collective_name(f.op);
    out << YAML::Key << "group" << YAML::Value << f.group;
    out << YAML::Key << "link" << YAML::Value << link_name(f.link);
    out << YAML::Key << "alpha" << YAML::Value << f.alpha;
    out << YAML::Key << "beta" << YAML::Value << f.beta;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void Profile::write(const std::string& path) const {
  AtomicFile file(path);
  const std::string text = to_yaml();
  file.write(text.data(), text.size());
  file.commit();
}

Profile Profile::read(const std::string& path) {
  const Reader r{path};
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ConfigError(str(path,
                          ": cannot read the profile (valid: a file written by `triax "
                          "calibrate CONFIG --out FILE`)"));
  } catch (const YAML::Exception& e) {
    r.fail("line " + std::to_string(e.mark.line + 1), "not YAML");
  }
  if (!root.IsMap()) r.fail("top level", "not a mapping");
  if (r.get<int>(root, "triax_profile", "top level") != 1) {
    r.fail("triax_profile", "an unknown format version (valid: 1)");
  }
  Profile p;
  p.model = r.get<std::string>(root, "model", "top level");
  p.source = r.get<std::string>(root, "source", "top level");
  p.ranks_per_node = r.get<int>(root, "ranks_per_node", "top level");
  p.cores_per_node = r.get<int>(root, "cores_per_node", "top level");
  p.threads_per_rank = r.get<int>(root, "threads_per_rank", "top level");
  if (p.ranks_per_node < 1 || p.cores_per_node < 1 || p.threads_per_rank < 1) {
    r.fail("top level", "ranks_per_node, cores_per_node and threads_per_rank must be >= 1");
  }
  p.optimizer_per_parameter =
      r.positive_or_zero(r.get<double>(root, "optimizer_per_parameter", "top level"), "top level",
                         "optimizer_per_parameter");
  p.step_overhead = r.positive_or_zero(r.get<double>(root, "step_overhead", "top level"),
                                       "top level", "step_overhead");
  p.base_bytes =
      r.positive_or_zero(r.get<double>(root, "base_bytes", "top level"), "top level", "base_bytes");
  // Optional: profiles written before they were measured keep the defaults.
  if (root["wait_share"]) {
    p.wait_share = r.get<double>(root, "wait_share", "top level");
    if (!(p.wait_share >= 0 && p.wait_share <= 1))
      r.fail("top level", "wait_share must be in [0, 1]");
  }
  if (root["op_seconds"]) {
    p.op_seconds = r.positive_or_zero(r.get<double>(root, "op_seconds", "top level"), "top level",
                                      "op_seconds");
  }
  if (root["sync_seconds"]) {
    p.sync_seconds = r.positive_or_zero(r.get<double>(root, "sync_seconds", "top level"),
                                        "top level", "sync_seconds");
  }
  const YAML::Node compute = root["compute"];
  if (!compute.IsSequence() || compute.size() == 0) r.fail("compute", "missing or empty");
  for (size_t i = 0; i < compute.size(); ++i) {
    const std::string where = str("compute[", i, "]");
    const YAML::Node n = compute[i];
    if (!n.IsMap()) r.fail(where, "not a mapping");
    ComputeTiming t;
    t.tp = r.get<int>(n, "tp", where);
    t.micro_batch = r.get<int64_t>(n, "micro_batch", where);
    if (t.tp < 1 || t.micro_batch < 1) r.fail(where, "tp and micro_batch must be >= 1");
    if (!parse_choice(r.get<std::string>(n, "recompute", where), &t.recompute)) {
      r.fail(where, "'recompute' is not none, full or selective");
    }
    t.sequence = r.get<bool>(n, "sequence", where);
    t.layer = r.pass(n, "layer", where);
    t.first = r.pass(n, "first", where);
    t.last = r.pass(n, "last", where);
    t.weight_share = r.get<double>(n, "weight_share", where);
    if (!(t.weight_share >= 0 && t.weight_share <= 1)) r.fail(where, "weight_share not in [0, 1]");
    p.compute.push_back(t);
  }
  const YAML::Node links = root["links"];
  if (!links.IsSequence()) r.fail("links", "missing or not a list");
  for (size_t i = 0; i < links.size(); ++i) {
    const std::string where = str("links[", i, "]");
    const YAML::Node n = links[i];
    if (!n.IsMap()) r.fail(where, "not a mapping");
    LinkFit f;
    const std::string op = r.get<std::string>(n, "op", where);
    bool known = false;
    for (Collective c : kCollectives) {
      if (op == collective_name(c)) f.op = c, known = true;
    }
    if (!known)
      r.fail(where, str("'op' is '", op,
                        "' (valid: all_reduce, all_gather, "
                        "reduce_scatter, send_recv)"));
    f.group = r.get<int>(n, "group", where);
    if (f.group < 2) r.fail(where, "'group' must be >= 2");
    const std::string link = r.get<std::string>(n, "link", where);
    if (link != "node" && link != "net") r.fail(where, "'link' is not node or net");
    f.link = link == "node" ? LinkClass::kNode : LinkClass::kNet;
    f.alpha = r.positive_or_zero(r.get<double>(n, "alpha", where), where, "alpha");
    f.beta = r.positive_or_zero(r.get<double>(n, "beta", where), where, "beta");
    p.links.push_back(f);
  }
  return p;
}

}  // namespace triax
