#include "core/bf16_matmul.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/torch.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/autocast_scope.h"
#include "core/bf16_bits.h"
#include "core/error.h"
#include "core/strings.h"

namespace triax {
namespace {

bool simulating_no_avx512() {
  const char* value = std::getenv("TRIAX_NO_AVX512");
  return value != nullptr && std::string(value) == "1";
}

bool cpu_has_bf16_dot() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
#else
  return false;  // other CPUs: the emulated path (its arithmetic is the same)
#endif
}

// The probe: a 64x1024 by 1024x64 product of positive bf16 inputs (a fixed pattern, not the RNG,
// whose state belongs to the run) by LibTorch's own bf16 kernel, against the fp32-summed product
// of the same inputs. Summed in bf16 (8-bit significand), partial sums of ~500 drop addends below
// 2: the result is tens of percent off; summed in fp32 it is within a bf16 ulp (1/128 relative).
bool native_sums_in_fp32() {
  torch::NoGradGuard no_grad;
  const AutocastScope plain(false);
  const torch::Tensor i = torch::arange(64, torch::kFloat).reshape({64, 1});
  const torch::Tensor k = torch::arange(1024, torch::kFloat).reshape({1, 1024});
  const torch::Tensor a = (0.5 + torch::remainder(i * 131 + k * 71, 97) / 194).to(torch::kBFloat16);
  const torch::Tensor b =
      (0.5 + torch::remainder(i * 37 + k * 89, 89) / 178).to(torch::kBFloat16).t().contiguous();
  const torch::Tensor native = torch::mm(a, b).to(torch::kFloat);
  const torch::Tensor fp32 = torch::mm(a.to(torch::kFloat), b.to(torch::kFloat));
  const double off = ((native - fp32).abs().max() / fp32.abs().max()).item<double>();
  return off <= 1.0 / 128;
}

Bf16Choice decide(Bf16Matmul requested) {
  const bool simulated = simulating_no_avx512();
  Bf16Choice c;
  c.cpu_bf16 = cpu_has_bf16_dot() && !simulated;
  // A CPU without AVX-512 has oneDNN, but not its bf16 matmul (which needs AVX-512): the probe
  // then meets LibTorch's generic kernel. oneDNN's fp32 kernels (GELU, ...) stay on, as there.
  const bool onednn = at::globalContext().userEnabledMkldnn();
  if (simulated) at::globalContext().setUserEnabledMkldnn(false);
  c.native_exact = native_sums_in_fp32();
  at::globalContext().setUserEnabledMkldnn(onednn);
  const std::string cpu = c.cpu_bf16 ? "this CPU has bf16 dot products (AVX512-BF16/AMX)"
                                     : "this CPU has no bf16 dot products (AVX512-BF16/AMX)";
  const std::string probe = c.native_exact ? "LibTorch's bf16 matmul sums in fp32 here"
                                           : "LibTorch's bf16 matmul sums in bf16 here";
  if (requested == Bf16Matmul::kNative && !c.native_exact) {
    throw ConfigError(str("train.bf16_matmul: native: ", probe,
                          " (a 64x1024x64 probe product is more than a bf16 ulp off), so bf16 "
                          "would not mean fp32 sums (valid here: auto, emulated)"));
  }
  const bool native = requested == Bf16Matmul::kNative ||
                      (requested == Bf16Matmul::kAuto && c.cpu_bf16 && c.native_exact);
  c.path = native ? Bf16Path::kNative : Bf16Path::kEmulated;
  c.why = native ? str("bf16 matmuls: native (oneDNN; ", cpu, ")")
                 : str("bf16 matmuls: emulated as fp32 products of bf16-rounded inputs (", cpu,
                       "; ", probe, "): bf16 brings no speed on this CPU, only its rounding");
  if (requested != Bf16Matmul::kAuto) c.why += str(" [train.bf16_matmul: ", requested, "]");
  return c;
}

// Every emulated product reads the choice: a lock-free load. A new choice (the tests set several)
// is a new object; the old ones are kept, since a caller may still hold a reference to one.
std::mutex choice_mutex;  // serialises deciding and guards `choices`
std::vector<std::unique_ptr<const Bf16Choice>>* choices = nullptr;  // every choice made
std::atomic<const Bf16Choice*> chosen{nullptr};                     // the latest of them

// Whether `t` takes the emulated path: a CPU tensor in a bf16 product (inside a bf16 autocast
// scope, or already bf16) on a process whose path is the emulated one.
bool emulates(const torch::Tensor& t) {
  if (!t.device().is_cpu()) return false;
  if (!AutocastScope::active() && t.scalar_type() != torch::kBFloat16) return false;
  return bf16_choice().path == Bf16Path::kEmulated;
}

// `kernel(in, out, n)` over every element of `t` into a new tensor of `dtype` and t's layout:
// a dense tensor (contiguous or a permutation of it, e.g. a transposed gradient) is one flat span
// and keeps its strides; anything else is made contiguous first. Split over the process's compute
// threads when large.
template <typename In, typename Out>
torch::Tensor elementwise(const torch::Tensor& t, torch::ScalarType dtype,
                          void (*kernel)(const In*, Out*, int64_t)) {
  const torch::Tensor in = t.is_non_overlapping_and_dense() ? t : t.contiguous();
  torch::Tensor out = torch::empty_strided(in.sizes(), in.strides(), in.options().dtype(dtype));
  const In* from = static_cast<const In*>(in.data_ptr());
  Out* to = static_cast<Out*>(out.data_ptr());
  at::parallel_for(0, in.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
    kernel(from + begin, to + begin, end - begin);
  });
  return out;
}

torch::Tensor rounded_values(const torch::Tensor& t) {  // fp32 -> fp32 holding bf16 values
  return elementwise<float, float>(t, torch::kFloat, &round_to_bf16_values);
}
torch::Tensor rounded_words(const torch::Tensor& t) {  // fp32 -> bf16
  return elementwise<float, uint16_t>(t, torch::kBFloat16, &round_to_bf16_words);
}
torch::Tensor widened(const torch::Tensor& t) {  // bf16 -> fp32
  return elementwise<uint16_t, float>(t, torch::kFloat, &widen_bf16_words);
}

// The gradients of the conversions: what autograd gives x.to(fp32) and x.to(bf16).
torch::Tensor widened_grad(const torch::Tensor& g) {
  return widened(g.scalar_type() == torch::kFloat ? rounded_words(g) : g.to(torch::kBFloat16));
}
torch::Tensor rounded_grad(const torch::Tensor& g) {
  return rounded_words(g.to(torch::kFloat));
}

// The three conversions of the emulated path as autograd functions, each differentiated as the
// LibTorch op it stands for: RoundToBf16 as x.to(bf16).to(fp32) (the gradient rounded the same
// way), ToBf16 as x.to(bf16) (the gradient widened), WidenBf16 as x.to(fp32) (the gradient
// rounded to bf16). One vectorised pass each way, in the tensor's own layout, where LibTorch
// 1.13's copy_ converts a transposed view element by element. They save nothing for backward, so
// a weight copy shared by several micro-batches' graphs can be differentiated once per
// micro-batch.
template <torch::Tensor (*Forward)(const torch::Tensor&),
          torch::Tensor (*Backward)(const torch::Tensor&)>
struct Conversion : public torch::autograd::Function<Conversion<Forward, Backward>> {
  static torch::Tensor forward(torch::autograd::AutogradContext*, const torch::Tensor& x) {
    return Forward(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grads) {
    return {grads[0].defined() ? Backward(grads[0]) : torch::Tensor()};
  }
};
using RoundToBf16 = Conversion<rounded_values, rounded_values>;
using ToBf16 = Conversion<rounded_words, widened_grad>;
using WidenBf16 = Conversion<widened, rounded_grad>;

// Rows of a bf16 table (mixed_embedding): widened forward; backward, the rows' gradients summed
// in fp32 (LibTorch's dense embedding backward) and rounded once.
struct Bf16Rows : public torch::autograd::Function<Bf16Rows> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& table,
                               const torch::Tensor& ids) {
    ctx->save_for_backward({ids});
    ctx->saved_data["rows"] = table.size(0);
    return widened(torch::embedding(table, ids));
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    if (!grads[0].defined()) return {torch::Tensor(), torch::Tensor()};
    const torch::Tensor ids = ctx->get_saved_variables()[0];
    const torch::Tensor sum = at::embedding_dense_backward(
        grads[0].to(torch::kFloat), ids, ctx->saved_data["rows"].toInt(), /*padding_idx=*/-1,
        /*scale_grad_by_freq=*/false);
    return {rounded_words(sum), torch::Tensor()};
  }
};

// The emulated linear of a bf16 weight (train.param_dtype: bf16): the same products as
// torch::linear of the widened weight, but it saves the bf16 weight itself, not a widened fp32
// copy, and widens it again in backward — so a micro-batch in flight holds no copy of the weights
// (and ZeRO-3 may free them between uses). Backward is autograd's for linear, written out: with
// the input folded to [N, in], grad_x = g W, grad_W = g^T x, grad_b = the column sums of g; the
// weight's and bias's gradients rounded to bf16 (what WidenBf16's backward does).
struct Bf16WeightLinear : public torch::autograd::Function<Bf16WeightLinear> {
  // A Function takes no undefined tensor: without a bias, `bias` is the weight again, unused.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               bool has_bias) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["bias"] = has_bias;
    return torch::linear(x, widened(weight), has_bias ? widened(bias) : torch::Tensor());
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor weight = widened(saved[1]);
    const torch::Tensor g = grads[0].reshape({-1, grads[0].size(-1)});
    torch::Tensor grad_x, grad_w, grad_b;
    if (ctx->needs_input_grad(0)) grad_x = g.mm(weight).view(x.sizes());
    if (ctx->needs_input_grad(1)) grad_w = rounded_words(g.t().mm(x.reshape({-1, x.size(-1)})));
    if (ctx->saved_data["bias"].toBool() && ctx->needs_input_grad(2)) {
      grad_b = rounded_words(g.sum(0));
    }
    return {grad_x, grad_w, grad_b, torch::Tensor()};
  }
};

// The emulated product's output: rounded to bf16 once (an fp32 result; anything else as is).
torch::Tensor bf16_output(const torch::Tensor& y) {
  if (y.scalar_type() != torch::kFloat) return y.to(torch::kBFloat16);
  return ToBf16::apply(y);
}

// The parameters' bf16 values while a Bf16WeightCopies scope is open on this thread: one copy per
// parameter and version, shared by the scope's micro-batches. The weak pointer keeps the key's
// address from being reused by another tensor while the entry lives.
struct WeightCopy {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> owner;
  int64_t version = 0;
  torch::Tensor values;
};
thread_local int copies_depth = 0;
thread_local std::unordered_map<const c10::TensorImpl*, WeightCopy> copies;

// The value a bf16 product sees, held in fp32: rounded to bf16 (exact when already bf16).
torch::Tensor bf16_value(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kBFloat16) return WidenBf16::apply(t);
  if (t.scalar_type() != torch::kFloat) return t.to(torch::kBFloat16).to(torch::kFloat);
  const bool shared =
      copies_depth > 0 && t.is_leaf() && t.requires_grad() && torch::GradMode::is_enabled();
  if (!shared) return RoundToBf16::apply(t);
  const auto it = copies.find(t.unsafeGetTensorImpl());
  if (it != copies.end() && !it->second.owner.expired() && it->second.version == t._version()) {
    return it->second.values;
  }
  WeightCopy copy{
      c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(t.getIntrusivePtr()),
      t._version(), RoundToBf16::apply(t)};
  copies.insert_or_assign(t.unsafeGetTensorImpl(), copy);
  return copy.values;
}

}  // namespace

const Bf16Choice& set_bf16_matmul(Bf16Matmul requested) {
  std::lock_guard<std::mutex> lock(choice_mutex);
  if (choices == nullptr) choices = new std::vector<std::unique_ptr<const Bf16Choice>>();
  choices->push_back(std::make_unique<const Bf16Choice>(decide(requested)));
  chosen.store(choices->back().get(), std::memory_order_release);
  return *choices->back();
}

const Bf16Choice& bf16_choice() {
  if (const Bf16Choice* c = chosen.load(std::memory_order_acquire)) return *c;
  return set_bf16_matmul(Bf16Matmul::kAuto);
}

Bf16WeightCopies::Bf16WeightCopies() {
  ++copies_depth;
}

Bf16WeightCopies::~Bf16WeightCopies() {
  if (--copies_depth == 0) copies.clear();
}

// Each emulated op: autocast off inside (its fp32 ops must stay fp32), the inputs' bf16 values in
// fp32, the plain op, one rounding of the output.
torch::Tensor mixed_linear(const torch::Tensor& x, const torch::Tensor& weight,
                           const torch::Tensor& bias) {
  if (!emulates(x)) {
    // bf16 working weights met by an fp32 input outside autocast (which would cast them itself):
    // widened, exactly, as torch::linear takes one dtype.
    const auto like_x = [&](const torch::Tensor& t) {
      const bool widen = t.defined() && t.scalar_type() == torch::kBFloat16 &&
                         x.scalar_type() == torch::kFloat && !AutocastScope::active();
      return widen ? convert_precision(t, torch::kFloat) : t;
    };
    return torch::linear(x, like_x(weight), like_x(bias));
  }
  const AutocastScope fp32(false);
  if (weight.scalar_type() == torch::kBFloat16 &&
      (!bias.defined() || bias.dtype() == weight.dtype())) {
    return bf16_output(Bf16WeightLinear::apply(bf16_value(x), weight,
                                               bias.defined() ? bias : weight, bias.defined()));
  }
  return bf16_output(torch::linear(bf16_value(x), bf16_value(weight),
                                   bias.defined() ? bf16_value(bias) : torch::Tensor()));
}

torch::Tensor mixed_mm(const torch::Tensor& a, const torch::Tensor& b) {
  if (!emulates(a)) return torch::mm(a, b);
  const AutocastScope fp32(false);
  return bf16_output(torch::mm(bf16_value(a), bf16_value(b)));
}

torch::Tensor mixed_matmul(const torch::Tensor& a, const torch::Tensor& b) {
  if (!emulates(a)) return torch::matmul(a, b);
  const AutocastScope fp32(false);
  return bf16_output(torch::matmul(bf16_value(a), bf16_value(b)));
}

torch::Tensor mixed_bmm(const torch::Tensor& a, const torch::Tensor& b) {
  if (!emulates(a)) return torch::bmm(a, b);
  const AutocastScope fp32(false);
  return bf16_output(torch::bmm(bf16_value(a), bf16_value(b)));
}

torch::Tensor mixed_baddbmm(const torch::Tensor& bias, const torch::Tensor& a,
                            const torch::Tensor& b, double beta, double alpha) {
  if (!emulates(a)) return torch::baddbmm(bias, a, b, beta, alpha);
  const AutocastScope fp32(false);
  return bf16_output(torch::baddbmm(bf16_value(bias), bf16_value(a), bf16_value(b), beta, alpha));
}

torch::Tensor convert_precision(const torch::Tensor& t, torch::ScalarType dtype) {
  if (t.scalar_type() == dtype) return t;
  if (t.device().is_cpu()) {
    if (t.scalar_type() == torch::kFloat && dtype == torch::kBFloat16) return ToBf16::apply(t);
    if (t.scalar_type() == torch::kBFloat16 && dtype == torch::kFloat) return WidenBf16::apply(t);
  }
  return t.to(dtype);
}

torch::Tensor mixed_embedding(const torch::Tensor& table, const torch::Tensor& ids) {
  if (table.scalar_type() != torch::kBFloat16 || !table.device().is_cpu()) {
    return torch::embedding(table, ids);
  }
  return Bf16Rows::apply(table, ids);
}

torch::Tensor mixed_add(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::ScalarType dtype = torch::promote_types(a.scalar_type(), b.scalar_type());
  return convert_precision(a, dtype) + convert_precision(b, dtype);
}

}  // namespace triax
