#include "train/param_server.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/flight_recorder.h"
#include "core/log.h"
#include "core/strings.h"
#include "job/heartbeat.h"
#include "parallel/comm/tree_all_reduce.h"
#include "parallel/grad_sums.h"
#include "train/optim/replicated_optimizer.h"

namespace triax {

ParameterServer::ParameterServer(const TrainConfig& train, ServerTopology& topology)
    : train_(train), topology_(topology), bridge_(topology.bridge()) {
  TRIAX_CHECK(topology.serves(), "ParameterServer on a rank that does not serve");
}

bool ParameterServer::serve_round() {
  out_.wait();  // the last round's answers: every worker has posted its receives by now
  // A dedicated server idles while the workers evaluate, write checkpoints or generate text, for
  // as long as that takes: its wait for their orders is not bounded by comm.timeout_s (the
  // heartbeat names a worker that is gone).
  std::vector<torch::Tensor> received;
  std::vector<WorkPtr> receiving;
  for (int w = 0; w < topology_.workers(); ++w) {
    received.push_back(torch::empty({4}, torch::kDouble));
    receiving.push_back(bridge_.irecv(received.back(), w, ps::kOrderTag));
  }
  for (auto& work : receiving) {
    while (!work->is_completed()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::vector<ps::Order> orders;
  for (const auto& t : received) orders.push_back(ps::decode_order(t));
  const ps::Order& order = orders.front();
  for (int w = 1; w < topology_.workers(); ++w) {
    TRIAX_CHECK(orders[static_cast<size_t>(w)].command == order.command &&
                    orders[static_cast<size_t>(w)].step == order.step,
                "parameter server ", topology_.server_index(), ": worker ", w, " sent order ",
                static_cast<int64_t>(orders[static_cast<size_t>(w)].command), " at step ",
                orders[static_cast<size_t>(w)].step, ", worker 0 order ",
                static_cast<int64_t>(order.command), " at step ", order.step);
  }
  if (order.command == ps::Command::kStep) {
    TRIAX_CHECK(started_, "parameter server: a step before init");
    step(order);
    return true;
  }
  return collective(order);
}

bool ParameterServer::collective(const ps::Order& order) {
  switch (order.command) {
    case ps::Command::kInit: {
      const std::string description = ps::recv_text(bridge_, 0);
      init(description, ps::recv_named(bridge_, 0));
      return true;
    }
    case ps::Command::kState:
      ps::send_named(bridge_, 0, state(), out_);
      return true;
    case ps::Command::kLoad:
      load(ps::recv_named(bridge_, 0));
      return true;
    case ps::Command::kStop:
      out_.wait();
      return false;
    case ps::Command::kRefuse:
      throw ConfigError(ps::recv_text(bridge_, 0));
    case ps::Command::kStep:
      break;
  }
  throw Error(str("parameter server: unknown order ", static_cast<int64_t>(order.command)));
}

void ParameterServer::serve_asynchronously(int64_t staleness, bool per_push, bool look_ahead,
                                           double heartbeat_s) {
  per_push_ = per_push;
  look_ahead_ = look_ahead;
  int64_t updates = 0;  // apply: step — the steps updated
  const int workers = topology_.workers();
  struct Worker {
    torch::Tensor order_buffer = torch::empty({4}, torch::kDouble);
    WorkPtr order_work;             // the next order, posted
    std::optional<ps::Order> held;  // an order every worker sends alike, until all have
    std::optional<ps::Order> step;  // the step being received
    std::vector<torch::Tensor> parts;
    std::vector<WorkPtr> receiving;
    torch::Tensor norm = torch::empty({1}, torch::kDouble);
    int64_t applied = 0;   // its steps applied (apply: step — received)
    bool waiting = false;  // applied, not yet answered
    bool dropped = false;  // lost (the heartbeat's verdict): the others go on without it
  };
  std::vector<Worker> ws(static_cast<size_t>(workers));
  const auto live = [&] {
    return static_cast<int>(
        std::count_if(ws.begin(), ws.end(), [](const Worker& x) { return !x.dropped; }));
  };
  // apply: step — each step's pushes by worker until every worker's has come (a worker runs at
  // most S steps ahead, so at most S + 1 steps are here), and the step's learning rate.
  struct Pending {
    std::vector<std::vector<torch::Tensor>> parts;  // [worker][buffer]; empty: not yet
    double lr = 0;
  };
  std::map<int64_t, Pending> pending;
  const auto post_order = [&](int w) {
    Worker& x = ws[static_cast<size_t>(w)];
    x.order_work = bridge_.irecv(x.order_buffer, w, ps::kOrderTag);
  };
  // Workers the heartbeat dropped (dedicated servers, tp = pp = 1: world rank = worker index).
  const auto drop = [&](int w) {
    Worker& x = ws[static_cast<size_t>(w)];
    if (x.dropped) return;
    x.dropped = true;
    // Its receives never complete (the works keep their buffers alive).
    if (x.order_work) ps::abandon(std::move(x.order_work));
    for (WorkPtr& r : x.receiving) ps::abandon(std::move(r));
    x.receiving.clear();
    x.parts.clear();
    x.step.reset();
    x.held.reset();
    x.waiting = false;
    out_.forget(w);
    std::fprintf(stderr, "%s parameter server %d: worker %d dropped (lost); %d worker(s) go on\n",
                 topology_.prefix().c_str(), topology_.server_index(), w, live());
  };
  const auto take_drops = [&] {
    for (int r : heartbeat_dropped_ranks()) {
      if (r >= 0 && r < workers) drop(r);
    }
  };
  // An MPI error on a worker's message: a lost worker (its transport saw it first), once the
  // heartbeat says so; anything else stands.
  const auto failed = [&](int w, const std::exception& e) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
           heartbeat_s + 3) {
      take_drops();
      if (ws[static_cast<size_t>(w)].dropped) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    throw Error(str("parameter server ", topology_.server_index(), ": worker ", w, ": ", e.what()));
  };
  for (int w = 0; w < workers; ++w) post_order(w);
  int64_t furthest = 0;  // the most steps a worker went on ahead of the slowest
  for (;;) {
    bool progressed = false;
    take_drops();
    for (int w = 0; w < workers; ++w) {
      Worker& x = ws[static_cast<size_t>(w)];
      if (x.dropped) continue;
      try {
        if (x.order_work && x.order_work->is_completed()) {
          x.order_work = nullptr;
          progressed = true;
          const ps::Order o = ps::decode_order(x.order_buffer);
          if (o.command != ps::Command::kStep) {
            x.held = o;  // its next order is posted once every worker's has come
            continue;
          }
          TRIAX_CHECK(started_, "parameter server: a step before init");
          x.step = o;
          x.parts.clear();
          x.receiving.clear();
          for (const Buffer& b : buffers_) {
            x.parts.push_back(torch::empty({b.numel}, torch::kFloat));
            x.receiving.push_back(bridge_.irecv(x.parts.back(), w, ps::push_tag(b.id)));
          }
          if (per_push_) x.receiving.push_back(bridge_.irecv(x.norm, w, ps::kNormTag));
          post_order(w);
        }
        if (x.step && !x.waiting &&
            std::all_of(x.receiving.begin(), x.receiving.end(),
                        [](const WorkPtr& r) { return r->is_completed(); })) {
          if (per_push_) {
            apply_one(x.parts, x.norm.item<double>(), x.step->lr / live());
          } else {
            Pending& p = pending[x.step->step];
            p.parts.resize(static_cast<size_t>(workers));
            p.parts[static_cast<size_t>(w)] = std::move(x.parts);
            p.lr = x.step->lr;
          }
          ++x.applied;
          x.waiting = true;
          progressed = true;
          x.parts.clear();
          x.receiving.clear();
        }
      } catch (const Error& e) {
        failed(w, e);
        progressed = true;
      }
    }
    // apply: step — every step all workers have pushed, in order: the synchronous update (sum in
    // worker order, the global norm over the server group: every server takes the same steps in
    // the same order, so their norms meet). A dropped worker's push counts if it came.
    const auto complete = [&](const Pending& p) {
      for (int w = 0; w < workers; ++w) {
        if (!ws[static_cast<size_t>(w)].dropped && p.parts[static_cast<size_t>(w)].empty()) {
          return false;
        }
      }
      return true;
    };
    while (!pending.empty() && complete(pending.begin()->second)) {
      Pending& p = pending.begin()->second;
      std::vector<torch::Tensor> gradients;
      for (size_t b = 0; b < buffers_.size(); ++b) {
        std::vector<torch::Tensor> column;
        for (auto& parts : p.parts) {
          if (!parts.empty()) column.push_back(parts[b]);
        }
        const double count = static_cast<double>(column.size());
        gradients.push_back(tree_sum(column));
        if (divisor_ * count != 1) gradients.back().div_(divisor_ * count);
      }
      last_norm_ = update(gradients, p.lr);
      ++updates;
      pending.erase(pending.begin());
      progressed = true;
    }
    // Answer every applied worker the bound lets go on: the slowest has applied `slowest` steps.
    int64_t slowest = std::numeric_limits<int64_t>::max();
    for (const Worker& x : ws) {
      if (!x.dropped) slowest = std::min(slowest, x.applied);
    }
    for (int w = 0; w < workers; ++w) {
      Worker& x = ws[static_cast<size_t>(w)];
      if (!x.waiting || x.dropped) continue;
      const int64_t done = x.step->step + 1;  // the step it pushed
      if (slowest < done - (x.step->meet ? 0 : staleness)) continue;
      furthest = std::max(furthest, done - slowest);
      // The look-ahead: until this worker's next push is applied, each other worker's push is
      // (push), or every step it is ahead of the last update (step). At a meeting every worker
      // goes on from the weights themselves.
      double ahead = 0;
      if (look_ahead_ && !x.step->meet) {
        ahead = per_push_ ? live() - 1 : static_cast<double>(x.applied - updates);
      }
      answer({w}, ahead);
      if (!per_push_ && topology_.server_index() == 0) {  // the norm of the last update, to log
        out_.add(bridge_.isend(torch::tensor({last_norm_}, torch::kDouble), w, ps::kNormTag), w);
      }
      if (x.step->meet && topology_.server_index() == 0) {
        // Who is left, for the meeting's collectives (every worker at it hears the same).
        torch::Tensor members = torch::zeros({workers}, torch::kDouble);
        for (int v = 0; v < workers; ++v) {
          if (ws[static_cast<size_t>(v)].dropped) members[v] = 1;
        }
        out_.add(bridge_.isend(members, w, ps::kMembersTag), w);
      }
      x.waiting = false;
      x.step.reset();
      progressed = true;
    }
    // A send to a worker lost meanwhile fails here: once the heartbeat has dropped it, its sends
    // are forgotten; anything else stands.
    for (const auto start = std::chrono::steady_clock::now();;) {
      try {
        out_.reap();
        break;
      } catch (const Error& e) {
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (waited > heartbeat_s + 3) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        take_drops();
      }
    }
    // An order every worker sends alike (they are all at it: no step is in flight).
    if (live() > 0 && std::all_of(ws.begin(), ws.end(), [](const Worker& x) {
          return x.dropped || x.held.has_value();
        })) {
      const ps::Order o =
          *std::find_if(ws.begin(), ws.end(), [](const Worker& x) { return !x.dropped; })->held;
      for (const Worker& x : ws) {
        TRIAX_CHECK(x.dropped || x.held->command == o.command, "parameter server ",
                    topology_.server_index(), ": the workers sent different orders");
      }
      if (o.command == ps::Command::kStop && started_) {
        // Dedicated servers do not log at info: the furthest lead goes to stderr for tests and
        // benchmarks.
        std::fprintf(stderr,
                     "%s parameter server %d: the furthest a worker ran ahead of the "
                     "slowest: %lld step(s) (staleness %lld)\n",
                     topology_.prefix().c_str(), topology_.server_index(),
                     static_cast<long long>(furthest), static_cast<long long>(staleness));
      }
      if (!collective(o)) return;
      for (int w = 0; w < workers; ++w) {
        if (ws[static_cast<size_t>(w)].dropped) continue;
        ws[static_cast<size_t>(w)].held.reset();
        post_order(w);
      }
      progressed = true;
    }
    // Idle: the workers compute. A short sleep leaves the cores to them.
    if (!progressed) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

size_t ParameterServer::param_index(const std::string& name) const {
  for (size_t k = 0; k < params_.size(); ++k) {
    if (params_[k].name == name) return k;
  }
  throw Error(str("parameter server ", topology_.server_index(), " holds no parameter ", name));
}

void ParameterServer::init(const std::string& description,
                           const std::vector<std::pair<std::string, torch::Tensor>>& values) {
  TRIAX_CHECK(!started_, "parameter server: init twice");
  std::istringstream in(description);
  std::string line;
  std::vector<std::pair<std::string, torch::Tensor>> counted;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = split(line, '\t');
    if (f[0] == "divisor") {
      divisor_ = std::stod(f.at(1));
    } else if (f[0] == "max_norm") {
      max_norm_ = std::stod(f.at(1));
    } else if (f[0] == "buffer") {
      Buffer b;
      b.id = std::stoi(f.at(1));
      b.numel = std::stoll(f.at(2));
      b.tied_to = f.size() > 3 ? f[3] : "";
      buffers_.push_back(std::move(b));
    } else if (f[0] == "sequence") {
      sequence_partial_.push_back(params_.at(param_index(f.at(1))).tensor);
    } else if (f[0] == "tied") {
      tied_copies_.push_back(params_.at(param_index(f.at(1))).tensor);
    } else if (f[0] == "param") {
      TRIAX_CHECK(!buffers_.empty() && f.size() >= 4, "parameter server: bad description: ", line);
      std::vector<int64_t> shape;
      for (size_t k = 4; k < f.size(); ++k) shape.push_back(std::stoll(f[k]));
      OptimizedParam p;
      p.name = f[1];
      p.counted = !f[3].empty();
      p.tensor = torch::zeros(shape, torch::kFloat).requires_grad_(true);
      if (p.counted) counted.emplace_back(f[3], p.tensor);
      buffers_.back().params.push_back(params_.size());
      buffers_.back().offsets.push_back(std::stoll(f[2]));
      params_.push_back(std::move(p));
    } else {
      throw Error(str("parameter server: bad description: ", line));
    }
  }
  for (Buffer& b : buffers_) {
    if (!b.params.empty()) continue;
    TRIAX_CHECK(!b.tied_to.empty(), "parameter server: buffer ", b.id, " holds nothing");
    const torch::Tensor& tied = params_[param_index(b.tied_to)].tensor;
    TRIAX_CHECK(tied.numel() == b.numel, "parameter server: holder of ", b.tied_to, " has ",
                b.numel, " elements");
    b.holder = torch::zeros_like(tied).requires_grad_(true);
  }
  load(values);
  // Collective over the server group: every server takes part, in or out of each group.
  Communicator& group = *topology_.server_group();
  sequence_group_ = group.split(sequence_partial_.empty() ? -1 : topology_.sequence_group_color(),
                                topology_.position());
  tied_group_ =
      group.split(tied_copies_.empty() ? -1 : topology_.tied_group_color(), topology_.position());
  optimizer_ = std::make_unique<ReplicatedOptimizer>(train_, params_, *topology_.server_group());
  // Every server's counted parameters in one order fixed by their names.
  norm_ = std::make_unique<OrderedGradNorm>(std::move(counted), *topology_.server_group());
  optimizer_->set_norm_source([this] { return per_push_ ? applied_norm_ : norm_->norm(); });
  started_ = true;
  int64_t numel = 0;
  for (const auto& p : params_) numel += p.tensor.numel();
  log::info(str("parameter server ", topology_.server_index(), " of position ",
                topology_.position(), ": ", params_.size(), " parameters (", numel, " values) in ",
                buffers_.size(), " buffers, for ", topology_.workers(), " workers"));
}

void ParameterServer::step(const ps::Order& order) {
  torch::NoGradGuard no_grad;
  const int workers = topology_.workers();
  // Every worker's push of every buffer, received in any order, added in worker order.
  std::vector<std::vector<torch::Tensor>> parts(buffers_.size());
  std::vector<WorkPtr> receiving;
  for (size_t b = 0; b < buffers_.size(); ++b) {
    for (int w = 0; w < workers; ++w) {
      parts[b].push_back(torch::empty({buffers_[b].numel}, torch::kFloat));
      receiving.push_back(bridge_.irecv(parts[b].back(), w, ps::push_tag(buffers_[b].id)));
    }
  }
  {
    const flight::Label label("PS pushes");
    for (auto& work : receiving) work->wait();
  }
  // One division of the whole batch's sum, by the same double DDP divides by.
  const double divisor = divisor_ * workers;
  std::vector<torch::Tensor> gradients;
  for (size_t b = 0; b < buffers_.size(); ++b) {
    gradients.push_back(tree_sum(parts[b]));
    if (divisor != 1) gradients.back().div_(divisor);
  }
  const double norm = update(gradients, order.lr);
  std::vector<int> everyone;
  for (int w = 0; w < workers; ++w) everyone.push_back(w);
  answer(everyone);
  if (topology_.server_index() == 0) {
    torch::Tensor n = torch::tensor({norm}, torch::kDouble);
    for (int w = 0; w < workers; ++w) out_.add(bridge_.isend(n, w, ps::kNormTag));
  }
}

double ParameterServer::update(const std::vector<torch::Tensor>& gradients, double lr) {
  torch::NoGradGuard no_grad;
  for (size_t b = 0; b < buffers_.size(); ++b) {
    const Buffer& buffer = buffers_[b];
    const torch::Tensor& g = gradients[b];
    if (buffer.holder.defined()) {
      buffer.holder.mutable_grad() = g.view(buffer.holder.sizes());
      continue;
    }
    for (size_t m = 0; m < buffer.params.size(); ++m) {
      torch::Tensor& p = params_[buffer.params[m]].tensor;
      p.mutable_grad() = g.narrow(0, buffer.offsets[m], p.numel()).view(p.sizes());
    }
  }
  if (!sequence_partial_.empty()) sum_sequence_partial_grads(sequence_partial_, *sequence_group_);
  if (!tied_copies_.empty()) sum_tied_grads(tied_copies_, tied_group_.get());
  for (const Buffer& buffer : buffers_) {
    if (buffer.holder.defined()) {
      sum_tied_grads({params_[param_index(buffer.tied_to)].tensor, buffer.holder}, nullptr);
    }
  }
  optimizer_->set_learning_rate(lr);
  if (!look_ahead_) return optimizer_->step(max_norm_);
  std::vector<torch::Tensor> before;
  for (const auto& p : params_) before.push_back(p.tensor.detach().clone());
  const double norm = optimizer_->step(max_norm_);
  last_update_.clear();
  for (size_t k = 0; k < params_.size(); ++k) {
    last_update_.push_back(params_[k].tensor.detach() - before[k]);
  }
  return norm;
}

void ParameterServer::answer(const std::vector<int>& workers, double ahead) {
  torch::NoGradGuard no_grad;
  const bool predict = ahead > 0 && !last_update_.empty();
  for (const Buffer& buffer : buffers_) {
    if (buffer.params.empty()) continue;
    std::vector<torch::Tensor> flat;
    for (size_t k : buffer.params) {
      const torch::Tensor w = params_[k].tensor.detach().reshape({-1});
      flat.push_back(predict ? w + ahead * last_update_[k].reshape({-1}) : w);
    }
    const torch::Tensor weights = torch::cat(flat);  // once for every worker answered
    for (int w : workers) out_.add(bridge_.isend(weights, w, ps::pull_tag(buffer.id)), w);
  }
}

void ParameterServer::apply_one(std::vector<torch::Tensor>& parts, double norm, double lr) {
  for (auto& g : parts) {
    if (divisor_ != 1) g.div_(divisor_);
  }
  applied_norm_ = norm;  // the optimizer's norm source while asynchronous
  update(parts, lr);
}

void ParameterServer::load(const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> by_name;
  for (const auto& [name, t] : tensors) by_name[name] = t;
  for (auto& p : params_) {
    const auto it = by_name.find(p.name);
    TRIAX_CHECK(it != by_name.end(), "parameter server: no value for ", p.name);
    p.tensor.copy_(it->second);
  }
  if (optimizer_) optimizer_->load_state(by_name);
}

std::vector<std::pair<std::string, torch::Tensor>> ParameterServer::state() {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  // Copies: an asynchronous server goes on updating the moments while they are on their way.
  for (auto& named : optimizer_->state_by_parameter()) {
    for (auto& item : named) out.emplace_back(item.first, item.second.clone());
  }
  return out;
}

void run_parameter_server(const Config& config, ServerTopology& topology) {
  ParameterServer server(config.train, topology);
  if (config.parameter_server.staleness > 0) {
    server.serve_asynchronously(config.parameter_server.staleness, applies_each_push(config),
                                config.parameter_server.look_ahead,
                                static_cast<double>(config.comm.heartbeat_s));
    return;
  }
  while (server.serve_round()) {
  }
}

}  // namespace triax
