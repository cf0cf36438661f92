#include "parallel/cp/all_to_all_attention.h"

#include "core/error.h"
#include "parallel/cp/exchange_wait.h"
#include "parallel/tp/autograd_comm.h"

namespace triax {

namespace {

constexpr int kAllToAllTag = 7303;

torch::Tensor to_heads(const torch::Tensor& x, const ContextSplit& split, Communicator& cp) {
  const int64_t c = split.size(), b = x.size(0), heads = x.size(1), s = x.size(2), d = x.size(3);
  TRIAX_CHECK(heads % c == 0, "all-to-all attention: ", heads, " heads over ", c, " ranks");
  if (c == 1) return x;
  // Chunk j of dim 0 (heads block j, this rank's positions) goes to rank j.
  const torch::Tensor send =
      x.reshape({b, c, heads / c, s, d}).transpose(0, 1).contiguous();  // [C, b, h/C, s, d]
  torch::Tensor received = torch::empty_like(send);
  {
    const ExchangeWait waited;
    cp.all_to_all_async(received, send, kAllToAllTag)->wait();
  }
  // received[i]: rank i's positions of this rank's heads.
  return split.assemble(received.unbind(0), 2);
}

torch::Tensor to_sequence(const torch::Tensor& x, const ContextSplit& split, Communicator& cp) {
  const int64_t c = split.size();
  if (c == 1) return x;
  std::vector<torch::Tensor> parts;  // rank j's positions of this rank's heads
  for (int j = 0; j < c; ++j) {
    parts.push_back(ContextSplit(split.length(), j, static_cast<int>(c)).take(x, 2));
  }
  const torch::Tensor send = torch::stack(parts).contiguous();  // [C, b, h/C, s, d]
  torch::Tensor received = torch::empty_like(send);
  {
    const ExchangeWait waited;
    cp.all_to_all_async(received, send, kAllToAllTag)->wait();
  }
  // received[i]: heads block i at this rank's positions.
  const auto sh = received.sizes();
  return received.transpose(0, 1).reshape({sh[1], sh[0] * sh[2], sh[3], sh[4]});
}

// One exchange as an autograd function: its backward is the other direction.
template <bool kToHeads>
class Exchange : public torch::autograd::Function<Exchange<kToHeads>> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const ContextSplit& split, Communicator& cp) {
    save_comm(ctx, cp);
    split.save_to(ctx);
    return kToHeads ? to_heads(x, split, cp) : to_sequence(x, split, cp);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const ContextSplit split = ContextSplit::saved_in(ctx);
    Communicator& cp = saved_comm(ctx);
    return {kToHeads ? to_sequence(grads[0], split, cp) : to_heads(grads[0], split, cp),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor sequence_to_heads(const torch::Tensor& x, const ContextSplit& split,
                                Communicator& cp) {
  TRIAX_CHECK(x.dim() == 4 && x.size(2) == split.local_length(), "sequence_to_heads: [b, heads, ",
              split.local_length(), ", d], got ", x.sizes());
  return Exchange<true>::apply(x, split, cp);
}

torch::Tensor heads_to_sequence(const torch::Tensor& x, const ContextSplit& split,
                                Communicator& cp) {
  TRIAX_CHECK(x.dim() == 4 && x.size(2) == split.length(), "heads_to_sequence: [b, heads / C, ",
              split.length(), ", d], got ", x.sizes());
  return Exchange<false>::apply(x, split, cp);
}

torch::Tensor all_to_all_attention(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const ContextSplit& split, Communicator& cp,
    const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&,
                                      const torch::Tensor&)>& attention) {
  TRIAX_CHECK(cp.size() == split.size() && cp.rank() == split.rank(),
              "all-to-all attention: split of ", split.size(), " ranks over a group of ",
              cp.size());
  TRIAX_CHECK(q.size(1) % split.size() == 0 && k.size(1) % split.size() == 0,
              "all-to-all attention: ", q.size(1), " heads and ", k.size(1),
              " kv heads must both be divisible by the ", split.size(), " context ranks");
  const torch::Tensor context =
      attention(sequence_to_heads(q, split, cp), sequence_to_heads(k, split, cp),
                sequence_to_heads(v, split, cp));
  return heads_to_sequence(context, split, cp);
}

}  // namespace triax
