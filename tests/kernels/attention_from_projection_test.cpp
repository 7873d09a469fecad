#include "vit/kernels/attention_from_projection.hpp"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <vector>

#include "vit/cpu_isa.hpp"
#include "vit/infer/precision.hpp"

// Named: the tests build as one unity file, where other tests' anonymous
// helpers (Reference, reference) share the namespace.
namespace vit::attention_test {
namespace {

// The fused projection's output without its bias, (B, N, 3*H*Dh), its
// bias (or none), and the merged output's gradient (B, N, H*Dh).
struct Projection {
  torch::Tensor qkv, bias, dout;
  int64_t heads;
};

Projection random_projection(int64_t batch, int64_t tokens, int64_t heads, int64_t dim,
                             torch::ScalarType dtype, bool with_bias, uint64_t seed) {
  torch::manual_seed(seed);
  Projection p{torch::randn({batch, tokens, 3 * heads * dim}).to(dtype),
               {},
               torch::randn({batch, tokens, heads * dim}).to(dtype),
               heads};
  if (with_bias) p.bias = torch::randn({3 * heads * dim}) * 0.5;
  return p;
}

struct Result {
  torch::Tensor out, dqkv, dbias;
};

Result run_ours(const Projection& p, double scale) {
  auto qkv = p.qkv.clone().requires_grad_();
  auto bias = p.bias.defined() ? p.bias.clone().requires_grad_() : torch::Tensor();
  auto out = attention_from_projection(qkv, bias, p.heads, scale);
  out.backward(p.dout);
  return {out.detach(), qkv.grad(), bias.defined() ? bias.grad() : torch::Tensor()};
}

// (B, N, 3*H*Dh) as the three parts' heads, (3, B, H, N, Dh), and back.
torch::Tensor as_heads(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), 3, heads, x.size(2) / (3 * heads)}).permute({2, 0, 3, 1, 4});
}
torch::Tensor as_projection(const torch::Tensor& parts) {
  return parts.permute({1, 3, 0, 2, 4}).flatten(2);
}
torch::Tensor merged(const torch::Tensor& heads) {  // (B, H, N, Dh) -> (B, N, H*Dh)
  return heads.transpose(1, 2).flatten(2);
}

// LibTorch in double from the same inputs, the bias added and rounded to
// the projection's dtype first (as the kernel and kernels/head_split add
// it); and what each result's error may grow from: the products of the
// operands' absolute values, through which the kernel's roundings to bf16
// (each 2^-8 of a value at most) reach it.
struct Reference {
  Result exact, scale_of;
};

Reference reference(const Projection& p, double scale) {
  const auto biased =
      p.bias.defined() ? (p.qkv.to(torch::kFloat) + p.bias).to(p.qkv.scalar_type()) : p.qkv;
  auto x = biased.to(torch::kDouble).requires_grad_();
  const auto parts = as_heads(x, p.heads);
  const auto q = parts[0], k = parts[1], v = parts[2];
  const auto probs = torch::softmax(torch::matmul(q, k.transpose(2, 3)) * scale, /*dim=*/-1);
  const auto out = merged(torch::matmul(probs, v));
  const auto dout = p.dout.to(torch::kDouble);
  out.backward(dout);
  Reference r;
  r.exact = {out.detach(), x.grad(), x.grad().sum(std::vector<int64_t>{0, 1})};
  torch::NoGradGuard no_grad;
  const auto dout_heads = as_heads(torch::cat({dout, dout, dout}, -1), p.heads)[0].abs();
  const auto p_abs = probs.detach();
  const auto q_abs = q.detach().abs(), k_abs = k.detach().abs(), v_abs = v.detach().abs();
  const auto dp_abs = torch::matmul(dout_heads, v_abs.transpose(2, 3));
  // The softmax's gradient p (dp - sum(p dp)) with every term taken absolute.
  const auto ds_abs = scale * p_abs * (dp_abs + (p_abs * dp_abs).sum(-1, /*keepdim=*/true));
  r.scale_of.out = merged(torch::matmul(p_abs, v_abs));
  r.scale_of.dqkv = as_projection(
      torch::stack({torch::matmul(ds_abs, k_abs), torch::matmul(ds_abs.transpose(2, 3), q_abs),
                    torch::matmul(p_abs.transpose(2, 3), dout_heads)}));
  r.scale_of.dbias = r.scale_of.dqkv.sum(std::vector<int64_t>{0, 1});
  return r;
}

// |actual - exact| <= steps 2^-8 scale + 1e-30, elementwise.
void expect_within_steps(const torch::Tensor& actual, const torch::Tensor& exact,
                         const torch::Tensor& scale, double steps, const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what;
  ASSERT_EQ(actual.sizes(), exact.sizes()) << what;
  const auto error = (actual.to(torch::kDouble) - exact).abs();
  const auto excess = error - (scale * (steps / 256.0) + 1e-30);
  EXPECT_LE(excess.max().item<double>(), 0.0)
      << what << ": largest difference " << error.max().item<double>() << " where the bound is "
      << (scale * (steps / 256.0)).flatten()[excess.flatten().argmax()].item<double>();
}

void expect_all_within_steps(const Result& o, const Reference& r, double steps,
                             const std::string& at) {
  expect_within_steps(o.out, r.exact.out, r.scale_of.out, steps, "out, " + at);
  expect_within_steps(o.dqkv, r.exact.dqkv, r.scale_of.dqkv, steps, "dqkv, " + at);
  if (r.exact.dbias.defined() && o.dbias.defined())
    expect_within_steps(o.dbias, r.exact.dbias, r.scale_of.dbias, steps, "dbias, " + at);
}

bool amx_here() {
  return cpu_isa() >= CpuIsa::kAmx;
}

std::string no_amx_reason() {
  return std::string("no AMX tiles here (VIT_CPU_ISA allows ") + cpu_isa_name(cpu_isa()) +
         "): attention_from_projection runs LibTorch's operators, tested by "
         "OtherProjectionsRunLibTorchsOperators";
}

TEST(AttentionFromProjection, OwnKernelRunsWithAmxOnContiguousBf16HeadsOfWidthsInThirtyTwos) {
  const auto p = random_projection(2, 65, 3, 64, torch::kBFloat16, true, 1);
  EXPECT_EQ(attention_from_projection_uses_own_kernel(p.qkv, p.bias, 3), amx_here());
  EXPECT_EQ(attention_from_projection_uses_own_kernel(p.qkv, {}, 3), amx_here());
  EXPECT_EQ(attention_from_projection_uses_own_kernel(p.qkv, {}, 6), amx_here());  // width 32

  EXPECT_FALSE(attention_from_projection_uses_own_kernel(p.qkv.to(torch::kFloat), p.bias, 3));
  EXPECT_FALSE(attention_from_projection_uses_own_kernel(p.qkv, p.bias, 4));  // width 48
  EXPECT_FALSE(attention_from_projection_uses_own_kernel(p.qkv, p.bias, 5));  // 576 / 15
  EXPECT_FALSE(attention_from_projection_uses_own_kernel(p.qkv.transpose(0, 1), p.bias, 3));
  EXPECT_FALSE(attention_from_projection_uses_own_kernel(p.qkv[0], p.bias, 3));
  EXPECT_FALSE(attention_from_projection_uses_own_kernel(p.qkv, p.bias.to(torch::kBFloat16), 3));
  EXPECT_FALSE(attention_from_projection_uses_own_kernel(p.qkv, p.bias.narrow(0, 0, 64), 3));

  // Asked before the projection: a bf16 input, or a float one under CPU
  // autocast in bf16; not a float one without it.
  const auto x = torch::randn({2, 65, 192});
  EXPECT_FALSE(attention_from_projection_will_use_own_kernel(x, p.bias, 3, 64));
  EXPECT_EQ(attention_from_projection_will_use_own_kernel(x.to(torch::kBFloat16), p.bias, 3, 64),
            amx_here());
  {
    AutocastScope autocast(Precision::kBf16, torch::kCPU);
    EXPECT_EQ(attention_from_projection_will_use_own_kernel(x, p.bias, 3, 64), amx_here());
    EXPECT_FALSE(attention_from_projection_will_use_own_kernel(x, p.bias, 4, 48));
  }
}

// Against double, from the same bf16 inputs: every result within four bf16
// steps of the scale its roundings reach it through (the probabilities and
// the scores' gradient rounded once each, then the result itself). Shapes:
// the CPU benchmark job's heads, with and without a bias, one token, widths
// 32 and 96, more than 128 tokens, and heads shared unevenly between 2
// threads.
TEST(AttentionFromProjection, Bf16HeadsMatchDoubleWithinTheirRoundings) {
  if (!amx_here()) GTEST_SKIP() << no_amx_reason();
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  struct Shape {
    int64_t batch, tokens, heads, dim;
    bool bias;
  };
  for (const Shape& s :
       {Shape{2, 65, 3, 64, true}, Shape{3, 65, 2, 64, false}, Shape{2, 1, 2, 32, true},
        Shape{1, 17, 2, 32, true}, Shape{2, 40, 1, 96, true}, Shape{1, 150, 1, 64, false}}) {
    const auto p = random_projection(s.batch, s.tokens, s.heads, s.dim, torch::kBFloat16, s.bias,
                                     uint64_t(s.tokens * 100 + s.dim));
    const double scale = 1.0 / std::sqrt(double(s.dim));
    ASSERT_TRUE(attention_from_projection_uses_own_kernel(p.qkv, p.bias, s.heads));
    const auto o = run_ours(p, scale);
    const std::string at = std::to_string(s.batch) + " x " + std::to_string(s.tokens) +
                           " tokens, " + std::to_string(s.heads) + " heads of " +
                           std::to_string(s.dim) + (s.bias ? ", bias" : ", no bias");
    EXPECT_EQ(o.out.scalar_type(), torch::kBFloat16) << at;
    EXPECT_EQ(o.dqkv.scalar_type(), torch::kBFloat16) << at;
    EXPECT_EQ(o.dbias.defined(), s.bias) << at;
    expect_all_within_steps(o, reference(p, scale), 4, at);
  }
  at::set_num_threads(threads);
}

// The bias's gradient is the sum of the projection's over its rows, as the
// kernel rounded them, the same on any number of threads.
TEST(AttentionFromProjection, BiasGradientIsTheProjectionsSummed) {
  if (!amx_here()) GTEST_SKIP() << no_amx_reason();
  const int threads = at::get_num_threads();
  const auto p = random_projection(5, 65, 3, 64, torch::kBFloat16, true, 6);
  at::set_num_threads(2);
  const auto o = run_ours(p, 0.125);
  at::set_num_threads(threads);
  const auto summed = o.dqkv.to(torch::kDouble).sum(std::vector<int64_t>{0, 1});
  EXPECT_LE((o.dbias.to(torch::kDouble) - summed).abs().max().item<double>(),
            1e-5 * summed.abs().max().item<double>());
}

// Without a graph to record the forward runs alone, and gives the same
// bits; so do 1 and 2 threads (each head is computed the same way on
// whichever thread takes it).
TEST(AttentionFromProjection, InferenceAndThreadCountsGiveTheSameBits) {
  if (!amx_here()) GTEST_SKIP() << no_amx_reason();
  const int threads = at::get_num_threads();
  const auto p = random_projection(3, 65, 3, 64, torch::kBFloat16, true, 7);
  at::set_num_threads(1);
  const auto one_thread = run_ours(p, 0.125);
  at::set_num_threads(2);
  const auto two_threads = run_ours(p, 0.125);
  torch::Tensor inference;
  {
    torch::NoGradGuard no_grad;
    inference = attention_from_projection(p.qkv, p.bias, 3, 0.125);
  }
  at::set_num_threads(threads);
  EXPECT_TRUE(one_thread.out.equal(two_threads.out));
  EXPECT_TRUE(one_thread.dqkv.equal(two_threads.dqkv));
  EXPECT_TRUE(one_thread.dbias.equal(two_threads.dbias));
  EXPECT_TRUE(inference.equal(one_thread.out));
}

// A thread's scratch serves head after head: a NaN and an infinity in one
// head spoil that head only, and every other head gets the bits it gets
// alone.
TEST(AttentionFromProjection, OneHeadsValuesNeverReachAnother) {
  if (!amx_here()) GTEST_SKIP() << no_amx_reason();
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  auto p = random_projection(2, 33, 2, 64, torch::kBFloat16, false, 8);
  const auto parts = as_heads(p.qkv, 2);                           // views of p.qkv
  parts[2][0][0][5][7] = std::numeric_limits<float>::infinity();   // v, batch 0, head 0
  parts[0][0][0][3][1] = std::numeric_limits<float>::quiet_NaN();  // q
  const auto o = run_ours(p, 0.125);
  const auto o_parts = as_heads(o.dqkv, 2);
  EXPECT_FALSE(torch::isfinite(o.out[0].narrow(1, 0, 64)).all().item<bool>());
  for (const auto& [b, head] : {std::pair<int64_t, int64_t>{0, 1}, {1, 0}, {1, 1}}) {
    Projection one{as_projection(parts.narrow(1, b, 1).narrow(2, head, 1)).contiguous(),
                   {},
                   p.dout.narrow(0, b, 1).narrow(2, head * 64, 64).contiguous(),
                   1};
    const auto alone = run_ours(one, 0.125);
    const std::string at = "batch " + std::to_string(b) + ", head " + std::to_string(head);
    EXPECT_TRUE(o.out[b].narrow(1, head * 64, 64).equal(alone.out[0])) << at;
    EXPECT_TRUE(o_parts.select(1, b).select(1, head).equal(
        as_heads(alone.dqkv, 1).select(1, 0).select(1, 0)))
        << at;
  }
  at::set_num_threads(threads);
}

// fp32 projections, strided ones and head widths the kernel does not take
// run LibTorch's operators, on every CPU: the same attention, as double
// computes it within float's error.
TEST(AttentionFromProjection, OtherProjectionsRunLibTorchsOperators) {
  const auto p = random_projection(2, 9, 4, 12, torch::kFloat, true, 9);
  ASSERT_FALSE(attention_from_projection_uses_own_kernel(p.qkv, p.bias, 4));
  const auto o = run_ours(p, 0.3);
  expect_all_within_steps(o, reference(p, 0.3), 256 * 1e-5, "fp32");  // 1e-5 of the scale

  Projection strided = p;
  strided.qkv = p.qkv.transpose(0, 1).contiguous().transpose(0, 1);
  ASSERT_FALSE(strided.qkv.is_contiguous());
  EXPECT_TRUE(torch::allclose(run_ours(strided, 0.3).out, o.out, /*rtol=*/1e-6, /*atol=*/1e-6));
}

}  // namespace
}  // namespace vit::attention_test
