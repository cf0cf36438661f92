#include "support/root_reference.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <thread>

#include "core/error.h"
#include "core/strings.h"

namespace triax::testing {

namespace {

// Waiting ranks sleep between polls: a rank that spins, even with sched_yield, is as entitled to
// its core as the root under the kernel's fair scheduler, and 7 of them left the root an eighth
// of one (measured: 8 ranks on 2 cores took longer than every rank training the reference). The
// deadline is PolledWork's: comm.timeout_s.
void wait_sleeping(Work& work) {
  const auto start = std::chrono::steady_clock::now();
  while (!work.is_completed()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
    if (waited.count() > Communicator::timeout()) {
      throw TimeoutError(
          str("waited ", static_cast<int>(waited.count()), " s for the reference's broadcast"));
    }
  }
  work.wait();
}

torch::Tensor text_bytes(const std::string& text) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(text.size())}, torch::kUInt8);
  std::copy(text.begin(), text.end(), static_cast<char*>(t.data_ptr()));
  return t;
}

}  // namespace

TensorMap computed_on(Communicator& world, int root, const std::function<TensorMap()>& compute) {
  std::vector<char> bytes;
  std::string failure;
  std::exception_ptr thrown;  // rethrown on the root once the others know
  if (world.rank() == root) {
    try {
      c10::Dict<std::string, at::Tensor> dict;
      for (const auto& [name, tensor] : compute()) dict.insert(name, tensor.contiguous());
      bytes = torch::jit::pickle_save(dict);
    } catch (const std::exception& e) {
      failure = e.what();
      thrown = std::current_exception();
    } catch (...) {  // a failed REQUIRE (Catch2's own type)
      failure = "a test assertion failed";
      thrown = std::current_exception();
    }
    if (thrown && failure.empty()) failure = "an error without a message";
  }
  // The size first (negative: the root failed, and its message's length follows), then the
  // pickled bytes or the message.
  torch::Tensor size = torch::tensor(
      {thrown ? -static_cast<int64_t>(failure.size()) : static_cast<int64_t>(bytes.size())},
      torch::kLong);
  wait_sleeping(*world.broadcast_async(size, root));
  const int64_t n = size.item<int64_t>();
  torch::Tensor buffer = world.rank() == root
                             ? (thrown ? text_bytes(failure)
                                       : torch::from_blob(bytes.data(), {n}, torch::kUInt8).clone())
                             : torch::empty({n < 0 ? -n : n}, torch::kUInt8);
  wait_sleeping(*world.broadcast_async(buffer, root));
  const char* data = static_cast<const char*>(buffer.data_ptr());
  if (thrown) std::rethrow_exception(thrown);
  if (n < 0) {
    throw std::runtime_error(
        str("the reference failed on rank ", root, ": ", std::string(data, data + buffer.numel())));
  }
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
