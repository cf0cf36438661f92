#include "checkpoint/redistribute.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "checkpoint/state_name.h"
#include "core/error.h"
#include "core/strings.h"
#include "parallel/comm/gather_text.h"

namespace triax {
namespace {

// One tensor's header in the list a writer sends: name, dtype, shape.
struct TensorHeader {
  std::string name;
  torch::ScalarType dtype = torch::kFloat;
  std::vector<int64_t> shape;
};

std::string encode_headers(const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  std::ostringstream out;
  for (const auto& [name, tensor] : tensors) {
    out << name << '\t' << static_cast<int>(tensor.scalar_type()) << '\t'
        << join(tensor.sizes().vec(), ",") << '\n';
  }
  return out.str();
}

std::vector<TensorHeader> decode_headers(const std::string& text) {
  std::vector<TensorHeader> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<std::string> fields = split(line, '\t');
    TRIAX_CHECK(fields.size() == 3, "re-layout: a malformed tensor header '", line, "'");
    TensorHeader header;
    header.name = fields[0];
    header.dtype = static_cast<torch::ScalarType>(std::stoi(fields[1]));
    if (!fields[2].empty()) {
      for (const std::string& dim : split(fields[2], ',')) header.shape.push_back(std::stoll(dim));
    }
    out.push_back(std::move(header));
  }
  return out;
}

// The position's tensors on every rank: one broadcast per dtype from `root` (the position's
// writer), the tensors of that dtype packed in list order.
std::vector<std::pair<std::string, torch::Tensor>> broadcast_position(
    Communicator& world, int root, const std::vector<TensorHeader>& headers,
    const std::vector<std::pair<std::string, torch::Tensor>>& mine) {
  std::map<torch::ScalarType, std::vector<size_t>> by_dtype;
  for (size_t i = 0; i < headers.size(); ++i) by_dtype[headers[i].dtype].push_back(i);
  std::vector<torch::Tensor> values(headers.size());
  for (const auto& [dtype, indices] : by_dtype) {
    int64_t total = 0;
    for (const size_t i : indices) {
      int64_t n = 1;
      for (const int64_t d : headers[i].shape) n *= d;
      total += n;
    }
    torch::Tensor packed;
    if (world.rank() == root) {
      std::vector<torch::Tensor> parts;
      for (const size_t i : indices) {
        parts.push_back(mine[i].second.detach().to(torch::kCPU).contiguous().view({-1}));
      }
      packed = torch::cat(parts);
    } else {
      packed = torch::empty({total}, torch::TensorOptions().dtype(dtype));
    }
    world.broadcast(packed, root);
    int64_t offset = 0;
    for (const size_t i : indices) {
      int64_t n = 1;
      for (const int64_t d : headers[i].shape) n *= d;
      values[i] = packed.narrow(0, offset, n).view(headers[i].shape).clone();
      offset += n;
    }
  }
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (size_t i = 0; i < headers.size(); ++i) out.emplace_back(headers[i].name, values[i]);
  return out;
}

}  // namespace

FullModelState gather_full_state(ParallelContext& context, const Config& config, int64_t step,
                                 CheckpointContents contents) {
  std::vector<ParameterEntry> table = contents.parameters;
  // Every replica joins the stream of a sharded optimizer's slices; only the writer keeps them.
  std::vector<std::pair<std::string, torch::Tensor>> mine = materialize(std::move(contents));
  const bool writer = context.replica().rank() == 0;
  if (!writer) mine.clear();
  // Dropout streams belong to a (stage, tp rank) position; the new layout starts new ones, as a
  // resharded checkpoint does.
  mine.erase(std::remove_if(mine.begin(), mine.end(),
                            [](const auto& item) { return StateName::parse(item.first).rng; }),
             mine.end());
  ShardRecord record;
  record.shard.pipeline_rank = context.pp_rank();
  record.shard.tensor_rank = context.tp_rank();
  record.parameters = table;
  const std::vector<std::string> records =
      all_gather_text(context.world(), writer ? record.encode() : "");
  const std::vector<std::string> headers =
      all_gather_text(context.world(), writer ? encode_headers(mine) : "");

  Manifest manifest;
  manifest.step = step;
  manifest.tensor = context.tp_size();
  manifest.pipeline = context.pp_size();
  manifest.chunks_per_rank = config.schedule.chunks_per_rank;
  manifest.config = config;
  std::map<std::pair<int, int>, std::vector<std::pair<std::string, torch::Tensor>>> shards;
  for (int rank = 0; rank < context.world_size(); ++rank) {
    const size_t r = static_cast<size_t>(rank);
    if (records[r].empty()) continue;
    const ShardRecord theirs = ShardRecord::decode(records[r]);
    if (theirs.shard.tensor_rank == 0) {
      manifest.parameters.insert(manifest.parameters.end(), theirs.parameters.begin(),
                                 theirs.parameters.end());
    }
    manifest.shards.push_back(theirs.shard);
    shards[{theirs.shard.pipeline_rank, theirs.shard.tensor_rank}] =
        broadcast_position(context.world(), rank, decode_headers(headers[r]), mine);
  }
  TRIAX_CHECK(static_cast<int64_t>(shards.size()) == manifest.tensor * manifest.pipeline,
              "re-layout: ", shards.size(), " positions sent their state, expected ",
              manifest.tensor * manifest.pipeline);
  return full_state_of(manifest, [&](const ShardEntry& shard) {
    return shards.at({shard.pipeline_rank, shard.tensor_rank});
  });
}

}  // namespace triax
