#include "support/root_reference.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace triax::testing {

namespace {

// Waiting ranks sleep between tests: a rank that spins, even with sched_yield, is as entitled to
// its core as the root under the kernel's fair scheduler, and 7 of them left the root an eighth
// of one (measured: 8 ranks on 2 cores took longer than every rank training the reference).
void wait_sleeping(Work& work) {
  while (!work.is_completed()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  work.wait();
}

}  // namespace

TensorMap computed_on(Communicator& world, int root, const std::function<TensorMap()>& compute) {
  std::vector<char> bytes;
  std::string failure;
  if (world.rank() == root) {
    try {
      c10::Dict<std::string, at::Tensor> dict;
      for (const auto& [name, tensor] : compute()) dict.insert(name, tensor.contiguous());
      bytes = torch::jit::pickle_save(dict);
    } catch (const std::exception& e) {
      failure = e.what();
    }
  }
  // The size first (-1: the root failed), then the pickled bytes.
  torch::Tensor size = torch::tensor(
      {failure.empty() ? static_cast<int64_t>(bytes.size()) : int64_t{-1}}, torch::kLong);
  wait_sleeping(*world.broadcast_async(size, root));
  const int64_t n = size.item<int64_t>();
  if (n < 0) {
    throw std::runtime_error(
        world.rank() == root ? failure : "the reference failed on rank " + std::to_string(root));
  }
  torch::Tensor buffer = world.rank() == root
                             ? torch::from_blob(bytes.data(), {n}, torch::kUInt8).clone()
                             : torch::empty({n}, torch::kUInt8);
  wait_sleeping(*world.broadcast_async(buffer, root));
  const char* data = static_cast<const char*>(buffer.data_ptr());
  const c10::IValue value = torch::jit::pickle_load(std::vector<char>(data, data + n));
  TensorMap out;
  for (const auto& item : value.toGenericDict()) {
    out.emplace(item.key().toStringRef(), item.value().toTensor());
  }
  return out;
}

torch::Tensor doubles(const std::vector<double>& values) {
  return torch::tensor(values, torch::kDouble);
}

std::vector<double> doubles(const torch::Tensor& tensor) {
  const torch::Tensor t = tensor.contiguous();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

}  // namespace triax::testing
