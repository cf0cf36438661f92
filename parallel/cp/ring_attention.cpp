#include "parallel/cp/ring_attention.h"

#include <limits>
#include <optional>
#include <utility>

#include "core/autocast_scope.h"
#include "core/error.h"
#include "parallel/cp/exchange_wait.h"
#include "parallel/tp/autograd_comm.h"

namespace triax {

namespace {

// Tags of the ring's two streams: the kv blocks, and (backward) their gradients.
constexpr int kBlockTag = 7301;
constexpr int kGradientTag = 7302;

enum class Pair { kSkip, kCausal, kFull };

Pair pair_of(int64_t query_chunk, int64_t key_chunk) {
  return key_chunk < query_chunk    ? Pair::kFull
         : key_chunk == query_chunk ? Pair::kCausal
                                    : Pair::kSkip;
}

// [b, kv_heads, s, d] -> [b * heads, s, d]: each kv head repeated for its query group.
torch::Tensor expand(const torch::Tensor& t, int64_t group) {
  const torch::Tensor e = group == 1 ? t : t.repeat_interleave(group, 1);
  return e.reshape({-1, t.size(2), t.size(3)});
}

// The inverse sum: [b * heads, s, d] -> [b, kv_heads, s, d], each group's gradients added.
torch::Tensor fold(const torch::Tensor& t, const torch::IntArrayRef kv_shape, int64_t group) {
  return t.view({kv_shape[0], kv_shape[1], group, kv_shape[2], kv_shape[3]}).sum(2);
}

// A block's scores: q k^T scaled, -inf above the diagonal of a causal pair.
torch::Tensor scores(const torch::Tensor& q, const torch::Tensor& k, Pair pair, double scale) {
  torch::Tensor s = torch::bmm(q, k.transpose(1, 2)).mul_(scale);
  if (pair == Pair::kCausal) {
    const int64_t c = s.size(1);
    const torch::Tensor above = torch::ones({c, c}, s.options().dtype(torch::kBool)).triu(1);
    s.masked_fill_(above, -std::numeric_limits<float>::infinity());
  }
  return s;
}

// One step's exchange with the ring's neighbours: send `out` on, receive `in` from behind.
class RingStep {
 public:
  RingStep(Communicator& cp, const torch::Tensor& out, const torch::Tensor& in, int tag) {
    const int size = cp.size(), rank = cp.rank();
    recv_ = cp.irecv(in, (rank + size - 1) % size, tag);
    send_ = cp.isend(out, (rank + 1) % size, tag);
  }
  void wait() {
    const ExchangeWait waited;
    send_->wait();
    recv_->wait();
  }
  // MPI advances a posted transfer only inside its calls: a test between blocks lets it move.
  void progress() { recv_->is_completed(); }

 private:
  WorkPtr send_, recv_;
};

struct Shapes {
  int64_t b, heads, kv_heads, s, d, group;
};

Shapes shapes_of(const torch::Tensor& q, const torch::Tensor& k) {
  return {q.size(0), q.size(1), k.size(1), q.size(2), q.size(3), q.size(1) / k.size(1)};
}

class RingAttention : public torch::autograd::Function<RingAttention> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                               const torch::Tensor& k, const torch::Tensor& v,
                               const ContextSplit& split, Communicator& cp, double scale) {
    const AutocastScope fp32(false);  // the blocks' arithmetic is fp32 under bf16 autocast too
    const Shapes sh = shapes_of(q, k);
    const int64_t n = sh.b * sh.heads, c = split.chunk();
    const torch::Tensor qf = q.to(torch::kFloat).reshape({n, sh.s, sh.d}).contiguous();
    torch::Tensor block = torch::stack({k, v}).to(torch::kFloat).contiguous();  // travels
    torch::Tensor arriving = torch::empty_like(block);
    torch::Tensor o = torch::zeros({n, sh.s, sh.d}, qf.options());
    torch::Tensor m = torch::full({n, sh.s}, -std::numeric_limits<float>::infinity(), qf.options());
    torch::Tensor l = torch::zeros({n, sh.s}, qf.options());
    const auto mine = split.chunks();
    const int size = split.size();
    for (int t = 0; t < size; ++t) {
      const int source = (split.rank() - t + size) % size;  // whose kv block this is
      std::optional<RingStep> step;
      if (t + 1 < size) step.emplace(cp, block, arriving, kBlockTag);
      const torch::Tensor kk = expand(block[0], sh.group), vv = expand(block[1], sh.group);
      const auto theirs = split.chunks_of(source);
      for (int h = 0; h < 2; ++h) {
        for (int g = 0; g < 2; ++g) {
          const Pair pair = pair_of(mine[h], theirs[g]);
          if (pair == Pair::kSkip) continue;
          const torch::Tensor s =
              scores(qf.narrow(1, h * c, c), kk.narrow(1, g * c, c), pair, scale);
          torch::Tensor mh = m.narrow(1, h * c, c), lh = l.narrow(1, h * c, c);
          const torch::Tensor m_new = torch::maximum(mh, s.amax(-1));
          const torch::Tensor rescale = torch::exp(mh - m_new);  // 0 before the first block
          const torch::Tensor p = torch::exp(s - m_new.unsqueeze(-1));
          lh.mul_(rescale).add_(p.sum(-1));
          torch::Tensor oh = o.narrow(1, h * c, c);
          oh.mul_(rescale.unsqueeze(-1)).baddbmm_(p, vv.narrow(1, g * c, c));
          mh.copy_(m_new);
          if (step) step->progress();
        }
      }
      if (step) {
        step->wait();
        std::swap(block, arriving);
      }
    }
    const torch::Tensor out = o.div_(l.unsqueeze(-1));
    const torch::Tensor lse = m.add_(l.log_());
    ctx->save_for_backward({q, k, v, out, lse});
    save_comm(ctx, cp);
    split.save_to(ctx);
    ctx->saved_data["scale"] = scale;
    return out.view({sh.b, sh.heads, sh.s, sh.d}).to(q.scalar_type());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const AutocastScope fp32(false);
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3],
                        &lse = saved[4];
    Communicator& cp = saved_comm(ctx);
    const ContextSplit split = ContextSplit::saved_in(ctx);
    const double scale = ctx->saved_data["scale"].toDouble();
    const Shapes sh = shapes_of(q, k);
    const int64_t n = sh.b * sh.heads, c = split.chunk();
    const torch::Tensor qf = q.to(torch::kFloat).reshape({n, sh.s, sh.d}).contiguous();
    const torch::Tensor dout = grads[0].to(torch::kFloat).reshape({n, sh.s, sh.d}).contiguous();
    const torch::Tensor delta = (dout * out).sum(-1);  // rowsum(dO o O): softmax's backward term
    torch::Tensor dq = torch::zeros_like(qf);
    torch::Tensor block = torch::stack({k, v}).to(torch::kFloat).contiguous();
    torch::Tensor arriving = torch::empty_like(block);
    // The gradient of the kv block held, travelling with it: [dk, dv] in the kv heads' shape.
    torch::Tensor gradient = torch::zeros_like(block);
    torch::Tensor gradient_arriving = torch::empty_like(gradient);
    const auto mine = split.chunks();
    const int size = split.size();
    // The previous step's gradient, still travelling while this step computes.
    std::optional<RingStep> passing;
    for (int t = 0; t < size; ++t) {
      const int source = (split.rank() - t + size) % size;
      std::optional<RingStep> step;
      if (t + 1 < size) step.emplace(cp, block, arriving, kBlockTag);
      const torch::Tensor kk = expand(block[0], sh.group), vv = expand(block[1], sh.group);
      torch::Tensor dk = torch::zeros_like(kk), dv = torch::zeros_like(vv);
      const auto theirs = split.chunks_of(source);
      for (int h = 0; h < 2; ++h) {
        for (int g = 0; g < 2; ++g) {
          const Pair pair = pair_of(mine[h], theirs[g]);
          if (pair == Pair::kSkip) continue;
          const torch::Tensor qh = qf.narrow(1, h * c, c), kg = kk.narrow(1, g * c, c);
          const torch::Tensor doh = dout.narrow(1, h * c, c);
          const torch::Tensor p =
              torch::exp(scores(qh, kg, pair, scale) - lse.narrow(1, h * c, c).unsqueeze(-1));
          dv.narrow(1, g * c, c).baddbmm_(p.transpose(1, 2), doh);
          const torch::Tensor dp = torch::bmm(doh, vv.narrow(1, g * c, c).transpose(1, 2));
          const torch::Tensor ds = p.mul_(dp.sub_(delta.narrow(1, h * c, c).unsqueeze(-1)));
          dq.narrow(1, h * c, c).baddbmm_(ds, kg, 1.0, scale);
          dk.narrow(1, g * c, c).baddbmm_(ds.transpose(1, 2), qh, 1.0, scale);
          if (step) step->progress();
          if (passing) passing->progress();
        }
      }
      if (passing) {
        // This block's gradient so far, from the rank that held it before (its send is done, so
        // the buffer it left can take the next arrival).
        passing->wait();
        passing.reset();
        std::swap(gradient, gradient_arriving);
      }
      gradient[0].add_(fold(dk, block[0].sizes(), sh.group));
      gradient[1].add_(fold(dv, block[1].sizes(), sh.group));
      // On to the next rank, which holds this block next, beside the next step's compute; after
      // the last step it reaches the block's owner.
      if (size > 1) passing.emplace(cp, gradient, gradient_arriving, kGradientTag);
      if (step) {
        step->wait();
        std::swap(block, arriving);
      }
    }
    if (passing) {  // this rank's own block's gradient, complete
      passing->wait();
      std::swap(gradient, gradient_arriving);
    }
    return {dq.view({sh.b, sh.heads, sh.s, sh.d}).to(q.scalar_type()),
            gradient[0].to(k.scalar_type()),
            gradient[1].to(v.scalar_type()),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

torch::Tensor ring_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const ContextSplit& split, Communicator& cp, double scale) {
  TRIAX_CHECK(cp.size() == split.size() && cp.rank() == split.rank(), "ring attention: split of ",
              split.size(), " ranks (rank ", split.rank(), ") over a group of ", cp.size(),
              " (rank ", cp.rank(), ")");
  TRIAX_CHECK(q.dim() == 4 && k.dim() == 4 && v.sizes() == k.sizes(),
              "ring attention: q [b, heads, s, d] and k, v [b, kv_heads, s, d], got ", q.sizes(),
              ", ", k.sizes(), ", ", v.sizes());
  TRIAX_CHECK(q.size(0) == k.size(0) && q.size(2) == k.size(2) && q.size(3) == k.size(3) &&
                  q.size(1) % k.size(1) == 0,
              "ring attention: q ", q.sizes(), " and k ", k.sizes(), " do not match");
  TRIAX_CHECK(q.size(2) == split.local_length(), "ring attention: ", q.size(2),
              " positions, this rank holds ", split.local_length());
  // NCCL runs separate point-to-point calls in order on one stream: every rank's receive would
  // wait for a send queued behind its neighbour's receive. The ring needs a grouped send and
  // receive there first (the trainer runs one rank per GPU job today: compute_device.h).
  TRIAX_CHECK(cp.backend() != "nccl", "ring attention over NCCL is not supported yet");
  return RingAttention::apply(q, k, v, split, cp, scale);
}

}  // namespace triax
