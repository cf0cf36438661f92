#include "parallel/ps/server_wire.h"

#include <sstream>

#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace ps {

void Outbox::reap() {
  // Tested first, taken out after: an error (a send to a peer that is gone) leaves the outbox
  // whole, so that the peer's sends can still be forgotten.
  std::vector<bool> done(works_.size());
  for (size_t k = 0; k < works_.size(); ++k) done[k] = works_[k].second->is_completed();
  std::vector<std::pair<int, WorkPtr>> left;
  for (size_t k = 0; k < works_.size(); ++k) {
    if (!done[k]) left.push_back(std::move(works_[k]));
  }
  works_ = std::move(left);
}

void Outbox::wait() {
  for (auto& work : works_) work.second->wait();
  works_.clear();
}

void Outbox::forget(int peer) {
  std::vector<std::pair<int, WorkPtr>> left;
  for (auto& work : works_) {
    if (work.first == peer) {
      abandon(std::move(work.second));
    } else {
      left.push_back(std::move(work));
    }
  }
  works_ = std::move(left);
}

Outbox::~Outbox() {
  // Unwinding after an error: the job is ending, but a send's buffer must outlive the send.
  for (auto& work : works_) {
    try {
      work.second->wait();
    } catch (...) {
    }
  }
}

void abandon(WorkPtr work) {
  static auto* kept = new std::vector<WorkPtr>();  // never destroyed, on purpose
  kept->push_back(std::move(work));
}

torch::Tensor encode_order(const Order& order) {
  return torch::tensor({static_cast<double>(order.command), static_cast<double>(order.step),
                        order.lr, order.meet ? 1.0 : 0.0},
                       torch::kDouble);
}

Order decode_order(const torch::Tensor& t) {
  const double* v = t.data_ptr<double>();
  Order order;
  order.command = static_cast<Command>(static_cast<int64_t>(v[0]));
  order.step = static_cast<int64_t>(v[1]);
  order.lr = v[2];
  order.meet = v[3] != 0;
  return order;
}

void send_order(Communicator& comm, int peer, const Order& order, Outbox& out) {
  out.add(comm.isend(encode_order(order), peer, kOrderTag));
}

Order recv_order(Communicator& comm, int peer) {
  torch::Tensor t = torch::empty({4}, torch::kDouble);
  comm.recv(t, peer, kOrderTag);
  return decode_order(t);
}

void send_text(Communicator& comm, int peer, const std::string& text, Outbox& out) {
  out.add(
      comm.isend(torch::tensor({static_cast<int64_t>(text.size())}, torch::kLong), peer, kTextTag));
  if (text.empty()) return;
  torch::Tensor bytes = torch::empty({static_cast<int64_t>(text.size())}, torch::kUInt8);
  std::memcpy(bytes.data_ptr<uint8_t>(), text.data(), text.size());
  out.add(comm.isend(bytes, peer, kTextTag));
}

std::string recv_text(Communicator& comm, int peer) {
  torch::Tensor size = torch::empty({1}, torch::kLong);
  comm.recv(size, peer, kTextTag);
  const int64_t n = size.item<int64_t>();
  if (n == 0) return "";
  torch::Tensor bytes = torch::empty({n}, torch::kUInt8);
  comm.recv(bytes, peer, kTextTag);
  return std::string(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()),
                     static_cast<size_t>(n));
}

void send_named(Communicator& comm, int peer,
                const std::vector<std::pair<std::string, torch::Tensor>>& tensors, Outbox& out) {
  std::ostringstream header;
  for (const auto& [name, t] : tensors) {
    header << name << '\t' << static_cast<int>(t.scalar_type());
    for (int64_t d : t.sizes()) header << '\t' << d;
    header << '\n';
  }
  send_text(comm, peer, header.str(), out);
  for (const auto& [name, t] : tensors) {
    if (t.numel() > 0) out.add(comm.isend(t.contiguous(), peer, kTensorTag));
  }
}

std::vector<std::pair<std::string, torch::Tensor>> recv_named(Communicator& comm, int peer) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  std::istringstream header(recv_text(comm, peer));
  std::string line;
  while (std::getline(header, line)) {
    const std::vector<std::string> fields = split(line, '\t');
    TRIAX_CHECK(fields.size() >= 2, "parameter server: a malformed tensor header: ", line);
    std::vector<int64_t> shape;
    for (size_t k = 2; k < fields.size(); ++k) shape.push_back(std::stoll(fields[k]));
    const auto dtype = static_cast<torch::ScalarType>(std::stoi(fields[1]));
    torch::Tensor t = torch::empty(shape, torch::TensorOptions().dtype(dtype));
    if (t.numel() > 0) comm.recv(t, peer, kTensorTag);
    out.emplace_back(fields[0], t);
  }
  return out;
}

}  // namespace ps
}  // namespace triax
