#include "parallel/ps/server_client.h"

#include <iomanip>
#include <sstream>

#include "core/error.h"
#include "core/flight_recorder.h"
#include "core/strings.h"
#include "parallel/dp/ordered_grad_norm.h"

namespace triax {

ServerClient::ServerClient(ServerTopology& topology)
    : topology_(topology), bridge_(topology.bridge()) {
  TRIAX_CHECK(topology.trains(), "ServerClient: a dedicated server is no worker");
}

void ServerClient::add_chunk(int chunk, std::vector<ServedBuffer> buffers) {
  TRIAX_CHECK(chunk == static_cast<int>(chunk_start_.size()), "ServerClient: chunk ", chunk,
              " added out of order");
  chunk_start_.push_back(static_cast<int>(buffers_.size()));
  for (auto& b : buffers) {
    TRIAX_CHECK(b.server >= 0 && b.server < topology_.servers(), "ServerClient: server ", b.server);
    buffers_.push_back(std::move(b));
  }
  TRIAX_CHECK(buffers_.size() <= static_cast<size_t>(ps::kMaxBuffers),
              "parameter servers: ", buffers_.size(), " gradient buckets at one position (at most ",
              ps::kMaxBuffers, "; raise ddp.bucket_mb)");
}

int ServerClient::id_of(int chunk, int index) const {
  return chunk_start_.at(static_cast<size_t>(chunk)) + index;
}

std::string ServerClient::describe(int server, double divisor, double max_norm) const {
  std::ostringstream out;
  out << std::setprecision(17);
  out << "divisor\t" << divisor << "\nmax_norm\t" << max_norm << "\n";
  for (size_t id = 0; id < buffers_.size(); ++id) {
    const ServedBuffer& b = buffers_[id];
    if (b.server != server) continue;
    out << "buffer\t" << id << '\t' << b.numel << '\t' << b.tied_to << '\n';
    for (const ServedParam& p : b.params) {
      out << "param\t" << p.name << '\t' << p.offset << '\t' << p.norm_key;
      for (int64_t d : p.tensor.sizes()) out << '\t' << d;
      out << '\n';
      if (p.sequence_partial) out << "sequence\t" << p.name << '\n';
      if (p.tied) out << "tied\t" << p.name << '\n';
    }
  }
  return out.str();
}

void ServerClient::order(ps::Command command) {
  ps::Order o;
  o.command = command;
  o.step = steps_;
  o.lr = lr_;
  o.meet = meet_ || !asynchronous_;
  for (int s = 0; s < topology_.servers(); ++s) {
    ps::send_order(bridge_, topology_.server_rank(s), o, out_);
  }
}

void ServerClient::start(double divisor, double max_norm) {
  divisor_ = divisor;
  pushed_.assign(buffers_.size(), torch::Tensor());
  order(ps::Command::kInit);
  if (bridge_.rank() == 0) {
    // Worker 0 describes each server's buffers and sends their values (every worker's are
    // equal: DDP broadcast them).
    for (int s = 0; s < topology_.servers(); ++s) {
      ps::send_text(bridge_, topology_.server_rank(s), describe(s, divisor, max_norm), out_);
      std::vector<std::pair<std::string, torch::Tensor>> values;
      for (const ServedBuffer& b : buffers_) {
        if (b.server != s) continue;
        for (const ServedParam& p : b.params) values.emplace_back(p.name, p.tensor.detach());
      }
      ps::send_named(bridge_, topology_.server_rank(s), values, out_);
    }
  }
  if (serve_) serve_();
  out_.wait();
}

WorkPtr ServerClient::push(int chunk, int index, const torch::Tensor& buffer) {
  if (!stepping_) {
    order(ps::Command::kStep);
    stepping_ = true;
  }
  const int id = id_of(chunk, index);
  const ServedBuffer& b = buffers_.at(static_cast<size_t>(id));
  TRIAX_CHECK(buffer.numel() == b.numel, "parameter servers: buffer ", id, " has ", buffer.numel(),
              " elements, its server expects ", b.numel);
  const flight::Label label(str("PS push ", id, " to server ", b.server));
  pushed_[static_cast<size_t>(id)] = buffer;
  return bridge_.isend(buffer, topology_.server_rank(b.server), ps::push_tag(id));
}

double ServerClient::pull() {
  if (!stepping_) order(ps::Command::kStep);  // nothing was pushed (no parameter learns here)
  stepping_ = false;
  double own_norm = 0;
  if (per_push_) {
    own_norm = pushed_norm();
    torch::Tensor n = torch::tensor({own_norm}, torch::kDouble);
    for (int s = 0; s < topology_.servers(); ++s) {
      out_.add(bridge_.isend(n, topology_.server_rank(s), ps::kNormTag));
    }
  }
  if (serve_) serve_();
  std::vector<torch::Tensor> weights(buffers_.size());
  std::vector<WorkPtr> receiving;
  for (size_t id = 0; id < buffers_.size(); ++id) {
    const ServedBuffer& b = buffers_[id];
    if (b.params.empty()) continue;  // a gradient holder: no weights of its own
    weights[id] = torch::empty({b.numel}, b.params.front().tensor.options());
    receiving.push_back(bridge_.irecv(weights[id], topology_.server_rank(b.server),
                                      ps::pull_tag(static_cast<int>(id))));
  }
  torch::Tensor norm = torch::tensor({own_norm}, torch::kDouble);
  if (!per_push_) {
    receiving.push_back(bridge_.irecv(norm, topology_.server_rank(0), ps::kNormTag));
  }
  const bool meeting = asynchronous_ && meet_;
  torch::Tensor members = torch::zeros({topology_.workers()}, torch::kDouble);
  if (meeting) {
    receiving.push_back(bridge_.irecv(members, topology_.server_rank(0), ps::kMembersTag));
  }
  {
    const flight::Label label("PS pull");
    for (auto& work : receiving) work->wait();
  }
  out_.wait();
  torch::NoGradGuard no_grad;
  for (size_t id = 0; id < buffers_.size(); ++id) {
    for (const ServedParam& p : buffers_[id].params) {
      p.tensor.copy_(weights[id].narrow(0, p.offset, p.tensor.numel()).view(p.tensor.sizes()));
    }
  }
  ++steps_;
  std::fill(pushed_.begin(), pushed_.end(), torch::Tensor());
  if (meeting) {
    dropped_.clear();
    for (int w = 0; w < topology_.workers(); ++w) {
      if (members[w].item<double>() != 0) dropped_.push_back(w);
    }
  }
  return norm.item<double>();
}

double ServerClient::pushed_norm() const {
  // Each counted parameter's gradient alone (the servers' OrderedGradNorm keys), added in key
  // order as the servers' norm does.
  std::map<std::string, torch::Tensor> by_name;  // a tied weight's holder
  for (size_t id = 0; id < buffers_.size(); ++id) {
    if (buffers_[id].params.empty() && pushed_[id].defined()) {
      by_name[buffers_[id].tied_to] = pushed_[id].reshape({-1});
    }
  }
  std::vector<std::pair<std::string, double>> squares;
  torch::NoGradGuard no_grad;
  for (size_t id = 0; id < buffers_.size(); ++id) {
    if (!pushed_[id].defined()) continue;
    for (const ServedParam& p : buffers_[id].params) {
      if (p.norm_key.empty()) continue;
      torch::Tensor g = pushed_[id].narrow(0, p.offset, p.tensor.numel()).clone();
      if (const auto it = by_name.find(p.name); it != by_name.end()) g += it->second;
      if (divisor_ != 1) g.div_(divisor_);
      squares.emplace_back(p.norm_key, ordered_sum_of_squares(g));
    }
  }
  std::sort(squares.begin(), squares.end());
  double total = 0;
  for (const auto& item : squares) total += item.second;
  return std::sqrt(total);
}

std::vector<std::pair<std::string, torch::Tensor>> ServerClient::fetch_state() {
  order(ps::Command::kState);
  if (serve_) serve_();
  std::vector<std::pair<std::string, torch::Tensor>> state;
  if (bridge_.rank() == 0) {
    for (int s = 0; s < topology_.servers(); ++s) {
      auto part = ps::recv_named(bridge_, topology_.server_rank(s));
      state.insert(state.end(), part.begin(), part.end());
    }
  }
  out_.wait();
  return state;
}

void ServerClient::load(const std::map<std::string, torch::Tensor>& tensors) {
  order(ps::Command::kLoad);
  if (bridge_.rank() == 0) {
    for (int s = 0; s < topology_.servers(); ++s) {
      // Each parameter's value and its optimizer state ("<name>@<kind>": checkpoint/state_name.h).
      std::vector<std::pair<std::string, torch::Tensor>> part;
      for (const ServedBuffer& b : buffers_) {
        if (b.server != s) continue;
        for (const ServedParam& p : b.params) {
          for (auto it = tensors.lower_bound(p.name);
               it != tensors.end() && it->first.compare(0, p.name.size(), p.name) == 0; ++it) {
            const std::string rest = it->first.substr(p.name.size());
            if (rest.empty() || rest.front() == '@') part.emplace_back(it->first, it->second);
          }
        }
      }
      ps::send_named(bridge_, topology_.server_rank(s), part, out_);
    }
  }
  if (serve_) serve_();
  out_.wait();
}

void ServerClient::stop() {
  order(ps::Command::kStop);
  if (serve_) serve_();
  out_.wait();
}

}  // namespace triax

namespace triax {

void ServerClient::refuse(const std::string& message) {
  // Colocated servers are workers: each stops with the same error itself.
  if (!topology_.dedicated()) return;
  order(ps::Command::kRefuse);
  if (bridge_.rank() == 0) {
    for (int s = 0; s < topology_.servers(); ++s) {
      ps::send_text(bridge_, topology_.server_rank(s), message, out_);
    }
  }
  out_.wait();  // a colocated server is a worker: it throws the same error itself
}

}  // namespace triax
