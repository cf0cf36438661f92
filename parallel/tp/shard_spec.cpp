#include "parallel/tp/shard_spec.h"

#include "core/error.h"

namespace triax {

torch::Tensor shard_of(const torch::Tensor& full, const ShardSpec& spec, int rank, int size) {
  TRIAX_CHECK(full.size(spec.dim) == spec.full_size, "full tensor has ", full.size(spec.dim),
              " along dim ", spec.dim, ", spec says ", spec.full_size);
  TRIAX_CHECK(spec.padded_size % (spec.stride * size) == 0, "padded size ", spec.padded_size,
              " is not divisible by stride ", spec.stride, " x tp ", size);
  const int64_t block = spec.padded_size / spec.stride;
  const int64_t chunk = block / size;
  // Rows [lo, hi) of the padded tensor: the real ones from `full`, zeros past full_size (the
  // padded tensor itself is never built: a converter slicing a large embedding holds only it).
  std::vector<torch::Tensor> parts;
  for (int64_t b = 0; b < spec.stride; ++b) {
    const int64_t lo = b * block + rank * chunk, hi = lo + chunk;
    const int64_t real_end = std::min(hi, spec.full_size);
    if (real_end > lo) parts.push_back(full.narrow(spec.dim, lo, real_end - lo));
    const int64_t zeros = hi - std::max(lo, spec.full_size);
    if (zeros > 0) {
      std::vector<int64_t> shape = full.sizes().vec();
      shape[static_cast<size_t>(spec.dim)] = zeros;
      parts.push_back(torch::zeros(shape, full.options()));
    }
  }
  return torch::cat(parts, spec.dim);
}

torch::Tensor unshard(const std::vector<torch::Tensor>& shards, const ShardSpec& spec) {
  TRIAX_CHECK(!shards.empty(), "unshard: no shards");
  const int64_t chunk = shards[0].size(spec.dim) / spec.stride;
  std::vector<torch::Tensor> pieces;
  for (int64_t b = 0; b < spec.stride; ++b) {
    for (const auto& shard : shards) pieces.push_back(shard.narrow(spec.dim, b * chunk, chunk));
  }
  return torch::cat(pieces, spec.dim).narrow(spec.dim, 0, spec.full_size).contiguous();
}

std::map<std::string, ShardSpec> collect_shard_specs(const torch::nn::Module& module) {
  std::map<std::string, ShardSpec> specs;
  for (const auto& item : module.named_modules("", /*include_self=*/true)) {
    const auto* sharded = dynamic_cast<const ShardedModule*>(item.value().get());
    if (sharded == nullptr) continue;
    for (const auto& [name, spec] : sharded->shard_specs()) {
      specs[item.key().empty() ? name : item.key() + "." + name] = spec;
    }
  }
  return specs;
}

std::map<std::string, ParamTraits> collect_param_traits(const torch::nn::Module& module) {
  std::map<std::string, ParamTraits> traits;
  for (const auto& item : module.named_parameters()) traits[item.key()] = ParamTraits{};
  for (const auto& item : module.named_modules("", /*include_self=*/true)) {
    const auto* sharded = dynamic_cast<const ShardedModule*>(item.value().get());
    if (sharded == nullptr) continue;
    const auto full = [&](const std::string& name) {
      return item.key().empty() ? name : item.key() + "." + name;
    };
    for (const auto& [name, spec] : sharded->shard_specs()) {
      ParamTraits& t = traits[full(name)];
      t.sharded = true;
      t.spec = spec;
    }
    for (const auto& name : sharded->tied_parameters()) traits[full(name)].tied = true;
    for (const auto& name : sharded->tied_copies()) traits[full(name)].tied_copy = true;
  }
  return traits;
}

}  // namespace triax
