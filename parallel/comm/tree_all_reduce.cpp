#include "parallel/comm/tree_all_reduce.h"

#include "core/error.h"

namespace triax {
namespace {

// Tags of the tree's messages, apart from the pipeline's (0 and small numbers).
constexpr int kTreeTag = 0x5400;

int largest_power_of_two_below(int n) {
  int p = 1;
  while (p * 2 < n) p *= 2;
  return p;
}

bool is_power_of_two(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

// Exchanges `send` for `recv` with `peer`. The lower rank of the pair sends first and the upper
// receives first, so that a backend that matches messages by order rather than tag (NCCL) pairs
// them too; both partners agree on which of the two is empty.
void exchange(Communicator& comm, const torch::Tensor& send, const torch::Tensor& recv, int peer,
              int tag) {
  WorkPtr sending, receiving;
  const auto post_send = [&] {
    if (send.numel() > 0) sending = comm.isend(send, peer, tag);
  };
  const auto post_recv = [&] {
    if (recv.numel() > 0) receiving = comm.irecv(recv, peer, tag);
  };
  if (comm.rank() < peer) {
    post_send();
    post_recv();
  } else {
    post_recv();
    post_send();
  }
  if (receiving) receiving->wait();
  if (sending) sending->wait();
}

// Recursive halving then doubling over the 2^L ranks [base, base + size) of `comm`; `flat` is
// this rank's contiguous tensor, summed in place.
void halving_doubling(Communicator& comm, torch::Tensor flat, int base, int size, int tag) {
  const int me = comm.rank() - base;
  int64_t lo = 0, hi = flat.numel();
  std::vector<std::pair<int64_t, int64_t>> windows;  // the window before each level
  for (int bit = 1; bit < size; bit *= 2) {
    windows.emplace_back(lo, hi);
    const int64_t mid = lo + (hi - lo) / 2;
    const bool lower = (me & bit) == 0;
    const int64_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
    const int64_t give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
    torch::Tensor incoming = torch::empty({keep_hi - keep_lo}, flat.options());
    exchange(comm, flat.slice(0, give_lo, give_hi), incoming, base + (me ^ bit), tag);
    // The lower subtree's sum first, as tree_sum adds (the same bits either way, but for the
    // payload of a NaN, which x86 takes from the first operand).
    torch::Tensor kept = flat.slice(0, keep_lo, keep_hi);
    if (lower) {
      kept.add_(incoming);
    } else {
      kept.copy_(incoming + kept);
    }
    lo = keep_lo;
    hi = keep_hi;
  }
  // All-gather: the levels in reverse, each rank sending the window it has completed.
  int bit = size / 2;
  for (auto it = windows.rbegin(); it != windows.rend(); ++it, bit /= 2) {
    const auto [outer_lo, outer_hi] = *it;
    const int64_t other_lo = lo == outer_lo ? hi : outer_lo;
    const int64_t other_hi = lo == outer_lo ? outer_hi : lo;
    exchange(comm, flat.slice(0, lo, hi), flat.slice(0, other_lo, other_hi), base + (me ^ bit),
             tag + 1);
    lo = outer_lo;
    hi = outer_hi;
  }
}

// The left-balanced tree over ranks [base, base + size): each subtree reduced apart, then the
// left's ranks and the right's exchange whole sums (left rank i with right rank i mod right).
void tree_reduce(Communicator& comm, torch::Tensor flat, int base, int size, int depth) {
  if (size == 1) return;
  const int tag = kTreeTag + 4 * depth;
  if (is_power_of_two(size)) {
    halving_doubling(comm, flat, base, size, tag);
    return;
  }
  const int left = largest_power_of_two_below(size), right = size - left;
  const int me = comm.rank() - base;
  const bool in_left = me < left;
  if (in_left) {
    halving_doubling(comm, flat, base, left, tag);
  } else {
    tree_reduce(comm, flat, base + left, right, depth + 1);
  }
  // Left rank i receives the right's sum from right rank i mod right, adds it (left + right);
  // right rank j receives the total from left rank j.
  if (in_left) {
    torch::Tensor other = torch::empty_like(flat);
    comm.recv(other, base + left + me % right, tag + 2);
    flat.add_(other);
    if (me < right) comm.send(flat, base + left + me, tag + 3);
  } else {
    const int j = me - left;
    for (int i = j; i < left; i += right) comm.send(flat, base + i, tag + 2);
    comm.recv(flat, base + j, tag + 3);
  }
}

}  // namespace

void tree_all_reduce(Communicator& comm, torch::Tensor tensor) {
  TRIAX_CHECK(tensor.is_floating_point(), "tree_all_reduce sums floating tensors, got ",
              tensor.scalar_type());
  TRIAX_CHECK(tensor.is_non_overlapping_and_dense(),
              "tree_all_reduce writes its result in place: the tensor must not overlap itself "
              "(an expanded view)");
  if (comm.size() == 1 || tensor.numel() == 0) return;  // every rank has the same shape
  torch::Tensor flat = tensor.is_contiguous() ? tensor.view(-1) : tensor.contiguous().view(-1);
  tree_reduce(comm, flat, 0, comm.size(), 0);
  if (!tensor.is_contiguous()) tensor.copy_(flat.view(tensor.sizes()));
}

torch::Tensor tree_sum(const std::vector<torch::Tensor>& parts) {
  TRIAX_CHECK(!parts.empty(), "tree_sum of no parts");
  if (parts.size() == 1) return parts[0].clone();
  const size_t left =
      static_cast<size_t>(largest_power_of_two_below(static_cast<int>(parts.size())));
  const std::vector<torch::Tensor> a(parts.begin(), parts.begin() + static_cast<long>(left));
  const std::vector<torch::Tensor> b(parts.begin() + static_cast<long>(left), parts.end());
  return tree_sum(a) + tree_sum(b);
}

static double tree_sum_range(const std::vector<double>& values, size_t begin, size_t end) {
  TRIAX_CHECK(begin < end && end <= values.size(), "tree_sum of no values");
  if (end - begin == 1) return values[begin];
  const size_t mid =
      begin + static_cast<size_t>(largest_power_of_two_below(static_cast<int>(end - begin)));
  return tree_sum_range(values, begin, mid) + tree_sum_range(values, mid, end);
}

double tree_sum_numbers(const std::vector<double>& values) {
  return tree_sum_range(values, 0, values.size());
}

}  // namespace triax
