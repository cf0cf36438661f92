#include "checkpoint/redistribute.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "checkpoint/state_name.h"
#include "core/error.h"
#include "core/strings.h"
#include "parallel/comm/shared_messages.h"

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

// A writer's message: the length of its text, the text (its shard record and tensor headers),
// then every tensor's bytes in header order, each from an 8-byte boundary (so that the receivers
// take the tensors as views of the message, without a copy), in one byte tensor. One message per
// writer, so the whole gather is a few collectives (under oversubscription each collective costs a
// scheduling round: one per tensor would dominate the pause).
int64_t aligned(int64_t bytes) {
  return (bytes + 7) / 8 * 8;
}

// A writer's message before it is written: its leading text and its tensors' bytes (contiguous,
// on the host), and the whole message's size.
struct Outgoing {
  std::string head;
  std::vector<torch::Tensor> flat;
  int64_t bytes = 0;
};

Outgoing plan_message(const ShardRecord& record,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  Outgoing out;
  const std::string text = record.encode() + '\x1e' + encode_headers(tensors);
  out.head = std::to_string(text.size()) + '\n' + text;
  out.bytes = aligned(static_cast<int64_t>(out.head.size()));
  for (const auto& item : tensors) {
    out.flat.push_back(item.second.detach().to(torch::kCPU).contiguous());
    out.bytes += aligned(out.flat.back().numel() * out.flat.back().element_size());
  }
  return out;
}

// Writes the message to `base` (out.bytes of them).
void write_message(const Outgoing& out, uint8_t* base) {
  char* at = reinterpret_cast<char*>(base);
  std::copy(out.head.begin(), out.head.end(), at);
  int64_t offset = aligned(static_cast<int64_t>(out.head.size()));
  for (const torch::Tensor& t : out.flat) {
    const int64_t bytes = t.numel() * t.element_size();
    std::memcpy(at + offset, t.data_ptr(), static_cast<size_t>(bytes));
    offset += aligned(bytes);
  }
}

struct Position {
  ShardRecord record;
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
};

// The tensors are views of `buffer` (kept alive by them), which holds the message from `message`.
Position unpack_position(const torch::Tensor& buffer, const char* message, size_t size) {
  const char* newline = std::find(message, message + size, '\n');
  TRIAX_CHECK(newline != message + size, "re-layout: a malformed state message");
  const size_t length = std::stoull(std::string(message, newline));
  const char* body = newline + 1;
  TRIAX_CHECK(body + length <= message + size, "re-layout: a state message is short");
  const std::string text(body, length);
  const size_t separator = text.find('\x1e');
  TRIAX_CHECK(separator != std::string::npos, "re-layout: a state message without headers");
  Position out;
  out.record = ShardRecord::decode(text.substr(0, separator));
  int64_t at = aligned(static_cast<int64_t>(body + length - message));
  for (const TensorHeader& header : decode_headers(text.substr(separator + 1))) {
    const auto options = torch::TensorOptions().dtype(header.dtype);
    int64_t numel = 1;
    for (const int64_t d : header.shape) numel *= d;
    const int64_t bytes = numel * static_cast<int64_t>(c10::elementSize(header.dtype));
    TRIAX_CHECK(at + bytes <= static_cast<int64_t>(size), "re-layout: the state message of '",
                header.name, "' is short");
    out.tensors.emplace_back(header.name, torch::from_blob(
                                              const_cast<char*>(message) + at, header.shape,
                                              [keep = buffer](void*) {}, options));
    at += aligned(bytes);
  }
  return out;
}

// Every rank's message on every rank (empty where a rank sends none). One padded all-gather when
// the writers' messages fill most of it (every rank a writer: dp 1); otherwise a broadcast from
// each writer, so that dp - 1 of every dp ranks do not send a model's worth of padding.
std::vector<torch::Tensor> all_gather_messages(Communicator& world, const Outgoing* outgoing) {
  torch::Tensor mine = torch::empty({outgoing != nullptr ? outgoing->bytes : 0}, torch::kByte);
  if (outgoing != nullptr) write_message(*outgoing, mine.data_ptr<uint8_t>());
  const torch::Tensor lengths = world.all_gather(torch::tensor({mine.numel()}, torch::kLong));
  const int n = world.size();
  int64_t longest = 0, sum = 0;
  for (int r = 0; r < n; ++r) {
    longest = std::max(longest, lengths[r].item<int64_t>());
    sum += lengths[r].item<int64_t>();
  }
  std::vector<torch::Tensor> out(static_cast<size_t>(n));
  if (longest * n <= 2 * sum) {
    torch::Tensor padded = torch::zeros({1, longest}, torch::kByte);
    padded[0].narrow(0, 0, mine.numel()).copy_(mine);
    const torch::Tensor all = world.all_gather(padded);
    for (int r = 0; r < n; ++r)
      out[static_cast<size_t>(r)] = all[r].narrow(0, 0, lengths[r].item<int64_t>());
    return out;
  }
  for (int r = 0; r < n; ++r) {
    const int64_t length = lengths[r].item<int64_t>();
    if (length == 0) continue;
    torch::Tensor message = r == world.rank() ? mine : torch::empty({length}, torch::kByte);
    world.broadcast(message, r);
    out[static_cast<size_t>(r)] = message;
  }
  return out;
}

}  // namespace

FullModelState gather_full_state(ParallelContext& context, const Config& config, int64_t step,
                                 CheckpointContents contents, StateExchange exchange,
                                 StateExchange* used) {
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
  std::optional<Outgoing> outgoing;
  if (writer) outgoing = plan_message(record, mine);
  mine.clear();
  // On one node each writer writes its message once where every rank reads it; across nodes
  // the messages are sent.
  Communicator& world = context.world();
  std::optional<std::vector<torch::Tensor>> messages;
  if (exchange == StateExchange::kShareOnOneNode) {
    messages = share_messages(world, outgoing ? outgoing->bytes : 0,
                              [&](uint8_t* at) { write_message(*outgoing, at); });
  }
  if (used != nullptr) *used = messages ? StateExchange::kShareOnOneNode : StateExchange::kSend;
  if (!messages) messages = all_gather_messages(world, outgoing ? &*outgoing : nullptr);
  outgoing.reset();
  std::vector<Position> positions;
  for (const torch::Tensor& message : *messages) {
    if (!message.defined() || message.numel() == 0) continue;
    positions.push_back(unpack_position(message,
                                        reinterpret_cast<const char*>(message.data_ptr<uint8_t>()),
                                        static_cast<size_t>(message.numel())));
  }

  Manifest manifest;
  manifest.step = step;
  manifest.tensor = context.tp_size();
  manifest.pipeline = context.pp_size();
  manifest.chunks_per_rank = config.schedule.chunks_per_rank;
  manifest.config = config;
  std::map<std::pair<int, int>, std::vector<std::pair<std::string, torch::Tensor>>> shards;
  for (Position& theirs : positions) {
    if (theirs.record.shard.tensor_rank == 0) {
      manifest.parameters.insert(manifest.parameters.end(), theirs.record.parameters.begin(),
                                 theirs.record.parameters.end());
    }
    manifest.shards.push_back(theirs.record.shard);
    shards[{theirs.record.shard.pipeline_rank, theirs.record.shard.tensor_rank}] =
        std::move(theirs.tensors);
  }
  TRIAX_CHECK(static_cast<int64_t>(shards.size()) == manifest.tensor * manifest.pipeline,
              "re-layout: ", shards.size(), " positions sent their state, expected ",
              manifest.tensor * manifest.pipeline);
  return full_state_of(manifest, [&](const ShardEntry& shard) {
    return shards.at({shard.pipeline_rank, shard.tensor_rank});
  });
}

}  // namespace triax
