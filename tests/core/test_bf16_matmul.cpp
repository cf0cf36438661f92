// The arithmetic of a bf16 matmul (Note [bf16 matmul arithmetic], core/bf16_matmul.h), pinned on
// whatever CPU runs the suite and on both paths: the product of bf16-rounded inputs, summed in
// fp32, rounded to bf16 once; backward the same. The reference is independent of LibTorch's
// kernels: the exact (fp64) product of the bf16-rounded inputs. A result "rounded once" from an
// fp32 sum is that product rounded to bf16, or its neighbour where the fp32 sum's own error moves
// it across a rounding boundary (a bf16 ulp is 2^8 fp32 ulps: rare); LibTorch 1.13's generic bf16
// kernel (what a CPU without AVX-512 runs) sums in bf16 and lands tens of ulps away.
// TRIAX_NO_AVX512=1 gives that CPU's decision on any machine (its probe meets LibTorch's generic
// kernel): the emulated path is checked there, and the native path here where the CPU has bf16
// dot products.
#include <catch2/catch.hpp>

#include <ATen/Context.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include "core/autocast_scope.h"
#include "core/bf16_bits.h"
#include "core/bf16_matmul.h"
#include "core/error.h"

using namespace triax;

namespace {

// A bf16 ulp at |v|: 2^(exponent - 7) (8 significant bits).
torch::Tensor bf16_ulp(const torch::Tensor& v) {
  return torch::pow(2.0, torch::floor(torch::log2(v.abs().clamp_min(1e-30))) - 7);
}

struct Rounding {
  double exact = 0;   ///< fraction of elements equal to the reference rounded to bf16
  double worst = 0;   ///< worst |result - reference| in bf16 ulps of the reference
  bool bf16 = false;  ///< the result is a bf16 tensor
};

// `result` against the fp64 `reference` of the same bf16-valued inputs.
Rounding rounding(const torch::Tensor& result, const torch::Tensor& reference) {
  Rounding r;
  r.bf16 = result.scalar_type() == torch::kBFloat16;
  const torch::Tensor y = result.to(torch::kDouble);
  const torch::Tensor once = reference.to(torch::kBFloat16).to(torch::kDouble);
  r.exact = y.eq(once).to(torch::kDouble).mean().item<double>();
  r.worst = ((y - reference).abs() / bf16_ulp(reference)).max().item<double>();
  return r;
}

void check_rounded_once(const Rounding& r) {
  INFO("exactly rounded: " << r.exact << ", worst error " << r.worst << " bf16 ulps");
  CHECK(r.bf16);
  CHECK(r.worst <= 1.0);   // the exact product rounded once, at most to the neighbour
  CHECK(r.exact >= 0.98);  // and nearly always to the nearest
}

torch::Tensor bf16_values(torch::Tensor t) {
  return t.to(torch::kBFloat16).to(torch::kDouble);
}

// Linear forward and backward, bmm and baddbmm (attention's products) through the mixed ops, each
// against its fp64 reference.
void check_arithmetic() {
  torch::manual_seed(7);
  const torch::Tensor x = torch::rand({64, 1024}).add(0.25).requires_grad_();  // positive: long
  const torch::Tensor w = torch::rand({64, 1024}).add(0.25).requires_grad_();  // sums, as the probe
  // Positive everywhere: no sum cancels, so a bf16 ulp of the result bounds the fp32 sum's error.
  const torch::Tensor grad_y = torch::rand({64, 64}).add(0.25).to(torch::kBFloat16);
  torch::Tensor y;
  {
    const AutocastScope precision(true);
    y = mixed_linear(x, w);
  }
  SECTION("linear forward") {
    check_rounded_once(rounding(y, torch::mm(bf16_values(x), bf16_values(w).t())));
  }
  SECTION("linear backward: grad_x = bf16(grad_y w), grad_w = bf16(grad_y^T x)") {
    y.backward(grad_y.to(y.scalar_type()));
    const torch::Tensor gy = grad_y.to(torch::kDouble);
    REQUIRE(x.grad().scalar_type() == torch::kFloat);  // fp32, holding bf16 values
    check_rounded_once(rounding(x.grad().to(torch::kBFloat16), torch::mm(gy, bf16_values(w))));
    check_rounded_once(rounding(w.grad().to(torch::kBFloat16), torch::mm(gy.t(), bf16_values(x))));
  }
  SECTION("bmm and baddbmm") {
    const torch::Tensor q = torch::rand({4, 32, 512}).add(0.25);
    const torch::Tensor k = torch::rand({4, 512, 32}).add(0.25);
    const torch::Tensor bias = torch::randn({32, 32});
    const AutocastScope precision(true);
    check_rounded_once(rounding(mixed_bmm(q, k), torch::bmm(bf16_values(q), bf16_values(k))));
    const torch::Tensor reference =
        bf16_values(bias) + 0.125 * torch::bmm(bf16_values(q), bf16_values(k));
    check_rounded_once(rounding(mixed_baddbmm(bias, q, k, 1.0, 0.125), reference));
  }
  SECTION("bf16 tensors outside autocast (a hand-written backward)") {
    const torch::Tensor a = torch::rand({64, 1024}).add(0.25).to(torch::kBFloat16);
    const torch::Tensor b = torch::rand({1024, 64}).add(0.25).to(torch::kBFloat16);
    check_rounded_once(
        rounding(mixed_mm(a, b), torch::mm(a.to(torch::kDouble), b.to(torch::kDouble))));
    check_rounded_once(
        rounding(mixed_matmul(a, b), torch::mm(a.to(torch::kDouble), b.to(torch::kDouble))));
  }
}

// train.bf16_matmul for the scope, then auto again (also when a REQUIRE ends the section).
struct Asked {
  explicit Asked(Bf16Matmul mode) : choice(set_bf16_matmul(mode)) {}
  ~Asked() { set_bf16_matmul(Bf16Matmul::kAuto); }
  const Bf16Choice& choice;
};

// TRIAX_NO_AVX512=1 for the scope: the process behaves as on a CPU without AVX-512.
struct NoAvx512 {
  NoAvx512() {
    setenv("TRIAX_NO_AVX512", "1", 1);
    set_bf16_matmul(Bf16Matmul::kAuto);
  }
  ~NoAvx512() {
    unsetenv("TRIAX_NO_AVX512");
    set_bf16_matmul(Bf16Matmul::kAuto);
  }
};

}  // namespace

TEST_CASE("a bf16 matmul is the fp32-summed product of bf16 inputs, rounded once", "[bf16]") {
  const Bf16Choice& choice = set_bf16_matmul(Bf16Matmul::kAuto);
  INFO(choice.why);
  SECTION("on the path this CPU takes") {
    check_arithmetic();
  }
  SECTION("emulated, asked for") {
    const Asked emulated(Bf16Matmul::kEmulated);
    REQUIRE(emulated.choice.path == Bf16Path::kEmulated);
    check_arithmetic();
  }
  SECTION("on a CPU without AVX-512 (TRIAX_NO_AVX512=1)") {
    const NoAvx512 no_avx512;
    REQUIRE(bf16_choice().path == Bf16Path::kEmulated);
    REQUIRE_FALSE(bf16_choice().native_exact);
    check_arithmetic();
  }
}

TEST_CASE("LibTorch's own bf16 kernel without AVX-512 sums in bf16, which auto never uses",
          "[bf16]") {
  // What the emulated path is for: the same product through LibTorch's generic kernel (oneDNN
  // off: its bf16 matmul is what a CPU without AVX-512 lacks).
  const NoAvx512 no_avx512;
  struct OneDnnOff {
    bool was = at::globalContext().userEnabledMkldnn();
    OneDnnOff() { at::globalContext().setUserEnabledMkldnn(false); }
    ~OneDnnOff() { at::globalContext().setUserEnabledMkldnn(was); }
  } onednn_off;
  torch::manual_seed(7);
  const torch::Tensor a = torch::rand({64, 1024}).add(0.25).to(torch::kBFloat16);
  const torch::Tensor b = torch::rand({1024, 64}).add(0.25).to(torch::kBFloat16);
  const Rounding generic =
      rounding(torch::mm(a, b), torch::mm(a.to(torch::kDouble), b.to(torch::kDouble)));
  INFO("LibTorch's generic bf16 kernel: worst error " << generic.worst << " bf16 ulps");
  CHECK(generic.worst > 4);  // if LibTorch ever sums in fp32 here, the probe says native_exact
  CHECK_THROWS_WITH(set_bf16_matmul(Bf16Matmul::kNative),
                    Catch::Contains("train.bf16_matmul: native") &&
                        Catch::Contains("valid here: auto, emulated"));
}

TEST_CASE("fp32 runs and the choice line", "[bf16]") {
  const Bf16Choice& choice = set_bf16_matmul(Bf16Matmul::kAuto);
  CHECK(choice.why.rfind("bf16 matmuls: ", 0) == 0);
  CHECK(choice.path ==
        (choice.cpu_bf16 && choice.native_exact ? Bf16Path::kNative : Bf16Path::kEmulated));
  if (choice.path == Bf16Path::kEmulated) {
    CHECK_THAT(choice.why, Catch::Contains("bf16 brings no speed on this CPU"));
  }
  // Outside a bf16 scope the mixed ops are the plain fp32 ops, bit for bit.
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({8, 16});
  const torch::Tensor w = torch::randn({4, 16});
  CHECK(torch::equal(mixed_linear(x, w), torch::linear(x, w)));
  CHECK(mixed_linear(x, w).scalar_type() == torch::kFloat);
}

TEST_CASE("the one-pass rounding gives LibTorch's bf16 values, bit for bit", "[bf16]") {
  // Ties (to even, both ways), the largest finite values (overflow to infinity), infinities, NaN,
  // subnormals, signed zeros, and a million random values over every exponent.
  std::vector<uint32_t> bits = {0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x3f808001u, 0x7f7fffffu,
                                0xff7fffffu, 0x7f7f7fffu, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                0xffc00001u, 0x7f800001u, 0x00000001u, 0x00008000u, 0x80018000u,
                                0x00000000u, 0x80000000u, 0x007fffffu};
  torch::manual_seed(11);
  const torch::Tensor random =
      torch::randint(0, int64_t{1} << 32, {1 << 20}, torch::kLong).to(torch::kInt);
  torch::Tensor words = torch::cat(
      {torch::from_blob(bits.data(), {static_cast<int64_t>(bits.size())}, torch::kInt), random});
  const torch::Tensor x = words.view(torch::kFloat);
  torch::Tensor y;
  {
    const NoAvx512 no_avx512;
    const AutocastScope precision(true);
    // x @ I: the product's input rounding alone shows (each output element is one input).
    y = mixed_matmul(x.reshape({-1, 1}), torch::ones({1, 1})).to(torch::kFloat).reshape({-1});
  }
  const torch::Tensor expected = x.to(torch::kBFloat16).to(torch::kFloat);
  torch::Tensor direct = torch::empty_like(x);
  round_to_bf16_values(x.data_ptr<float>(), direct.data_ptr<float>(), x.numel());
  // A NaN stays a NaN; its bits differ (LibTorch's vectorised conversion writes 0xffff, its scalar
  // one and ours 0x7fc0), every other value is the same word.
  const torch::Tensor nan = expected.isnan();
  CHECK(torch::equal(direct.isnan(), nan));
  CHECK(torch::equal(direct.masked_fill(nan, 0).view(torch::kInt),
                     expected.masked_fill(nan, 0).view(torch::kInt)));
  CHECK(torch::equal(y.isnan(), nan));
  // Through the product the same values (a -0 input comes out +0: the fp32 sum starts at +0).
  CHECK(torch::equal(y.masked_fill(nan, 0), expected.masked_fill(nan, 0)));
}

TEST_CASE("a step's shared weight copies change no bit of forward or backward", "[bf16]") {
  const NoAvx512 no_avx512;
  torch::manual_seed(5);
  const torch::Tensor w = torch::randn({32, 64}).requires_grad_();
  const torch::Tensor b = torch::randn({32}).requires_grad_();
  const std::vector<torch::Tensor> xs = {torch::randn({8, 64}), torch::randn({8, 64}),
                                         torch::randn({8, 64})};
  // Three micro-batches' forward and backward, each under its own autocast scope as the trainer
  // runs them, with or without one Bf16WeightCopies around them; then an in-place update (the
  // optimizer) and one more micro-batch, whose copy must be of the new weights.
  auto run = [&](bool shared) {
    w.mutable_grad() = torch::Tensor();
    b.mutable_grad() = torch::Tensor();
    std::vector<torch::Tensor> outputs;
    const torch::Tensor saved = w.detach().clone();
    {
      std::optional<Bf16WeightCopies> copies;
      if (shared) copies.emplace();
      std::vector<torch::Tensor> ys;
      for (const torch::Tensor& x : xs) {
        const AutocastScope precision(true);
        ys.push_back(mixed_linear(x, w, b));
      }
      for (const torch::Tensor& y : ys) {  // backward after all forwards, as a pipeline does
        y.to(torch::kFloat).square().sum().backward();
        outputs.push_back(y.detach().to(torch::kFloat));
      }
      {
        torch::NoGradGuard no_grad;
        w.mul_(0.5);  // a new version
      }
      const AutocastScope precision(true);
      outputs.push_back(mixed_linear(xs[0], w, b).detach().to(torch::kFloat));
    }
    outputs.push_back(w.grad().clone());
    outputs.push_back(b.grad().clone());
    torch::NoGradGuard no_grad;
    w.copy_(saved);
    return outputs;
  };
  const std::vector<torch::Tensor> each = run(false);
  const std::vector<torch::Tensor> shared = run(true);
  REQUIRE(each.size() == shared.size());
  for (size_t i = 0; i < each.size(); ++i) {
    INFO("output " << i);
    CHECK(torch::equal(each[i], shared[i]));
  }
}
