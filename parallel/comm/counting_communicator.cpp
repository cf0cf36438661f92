#include "parallel/comm/counting_communicator.h"

namespace triax {
namespace {
int64_t bytes(const torch::Tensor& t) {
  return t.numel() * t.element_size();
}
}  // namespace

WorkPtr CountingCommunicator::all_reduce_async(torch::Tensor tensor, ReduceOp op) {
  ++counts_.all_reduce_calls;
  counts_.all_reduce_bytes += bytes(tensor);
  return inner_.all_reduce_async(std::move(tensor), op);
}

WorkPtr CountingCommunicator::all_gather_async(torch::Tensor output, torch::Tensor input) {
  ++counts_.all_gather_calls;
  counts_.all_gather_bytes += bytes(input);
  return inner_.all_gather_async(std::move(output), std::move(input));
}

WorkPtr CountingCommunicator::reduce_scatter_async(torch::Tensor output, torch::Tensor input,
                                                   ReduceOp op) {
  ++counts_.reduce_scatter_calls;
  counts_.reduce_scatter_bytes += bytes(input);
  return inner_.reduce_scatter_async(std::move(output), std::move(input), op);
}

WorkPtr CountingCommunicator::broadcast_async(torch::Tensor tensor, int root) {
  ++counts_.broadcast_calls;
  counts_.broadcast_bytes += bytes(tensor);
  return inner_.broadcast_async(std::move(tensor), root);
}

WorkPtr CountingCommunicator::isend(torch::Tensor tensor, int dst, int tag) {
  counts_.send_bytes += bytes(tensor);
  return inner_.isend(std::move(tensor), dst, tag);
}

WorkPtr CountingCommunicator::irecv(torch::Tensor tensor, int src, int tag) {
  counts_.recv_bytes += bytes(tensor);
  return inner_.irecv(std::move(tensor), src, tag);
}

WorkPtr CountingCommunicator::all_to_all_async(torch::Tensor output, torch::Tensor input, int tag) {
  ++counts_.all_to_all_calls;
  counts_.all_to_all_bytes += bytes(input) / size() * (size() - 1);  // its own chunk stays
  return inner_.all_to_all_async(std::move(output), std::move(input), tag);
}

}  // namespace triax
