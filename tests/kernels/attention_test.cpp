#include "vit/kernels/attention.hpp"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <vector>

#include "vit/cpu_isa.hpp"

// Named: the tests build as one unity file, where other tests' anonymous
// helpers (Reference, reference) share the namespace.
namespace vit::attention_test {
namespace {

struct Heads {
  torch::Tensor q, k, v;  // (B, H, Nq, Dh), (B, H, N, Dh) twice
  torch::Tensor dout;     // the merged output's gradient, (B, Nq, H*Dh)
};

Heads random_heads(int64_t batch, int64_t heads, int64_t queries, int64_t keys, int64_t dim,
                   torch::ScalarType dtype, uint64_t seed) {
  torch::manual_seed(seed);
  const auto make = [&](int64_t rows) { return torch::randn({batch, heads, rows, dim}).to(dtype); };
  Heads h{make(queries), make(keys), make(keys), {}};
  h.dout = torch::randn({batch, queries, heads * dim}).to(dtype);
  return h;
}

struct Result {
  torch::Tensor out, dq, dk, dv;
};

Result run_ours(const Heads& h, double scale) {
  auto q = h.q.clone().requires_grad_(), k = h.k.clone().requires_grad_(),
       v = h.v.clone().requires_grad_();
  auto out = attention_heads_merged(q, k, v, scale);
  out.backward(h.dout);
  return {out.detach(), q.grad(), k.grad(), v.grad()};
}

torch::Tensor merged(const torch::Tensor& heads) {  // (B, H, Nq, Dh) -> (B, Nq, H*Dh)
  return heads.transpose(1, 2).flatten(2);
}

// LibTorch in double from the same inputs, and what each result's error may
// grow from: the products of the operands' absolute values, through which
// the kernel's roundings to bf16 (each 2^-8 of a value at most) reach it.
struct Reference {
  Result exact, scale_of;
};

Reference reference(const Heads& h, double scale) {
  auto q = h.q.to(torch::kDouble).requires_grad_(), k = h.k.to(torch::kDouble).requires_grad_(),
       v = h.v.to(torch::kDouble).requires_grad_();
  const auto p = torch::softmax(torch::matmul(q, k.transpose(2, 3)) * scale, /*dim=*/-1);
  const auto out = merged(torch::matmul(p, v));
  const auto dout = h.dout.to(torch::kDouble);
  out.backward(dout);
  Reference r{{out.detach(), q.grad(), k.grad(), v.grad()}, {}};
  torch::NoGradGuard no_grad;
  const auto dout_heads = dout.view({h.q.size(0), h.q.size(2), h.q.size(1), h.q.size(3)})
                              .transpose(1, 2)
                              .abs();  // (B, H, Nq, Dh)
  const auto p_abs = p.detach();
  const auto dp_abs = torch::matmul(dout_heads, v.detach().abs().transpose(2, 3));
  // The softmax's gradient p (dp - sum(p dp)) with every term taken absolute.
  const auto ds_abs = scale * p_abs * (dp_abs + (p_abs * dp_abs).sum(-1, /*keepdim=*/true));
  r.scale_of.out = merged(torch::matmul(p_abs, v.detach().abs()));
  r.scale_of.dv = torch::matmul(p_abs.transpose(2, 3), dout_heads);
  r.scale_of.dq = torch::matmul(ds_abs, k.detach().abs());
  r.scale_of.dk = torch::matmul(ds_abs.transpose(2, 3), q.detach().abs());
  return r;
}

// |actual - exact| <= steps 2^-8 scale + 1e-30, elementwise.
void expect_within_steps(const torch::Tensor& actual, const torch::Tensor& exact,
                         const torch::Tensor& scale, double steps, const std::string& what) {
  ASSERT_EQ(actual.sizes(), exact.sizes()) << what;
  const auto error = (actual.to(torch::kDouble) - exact).abs();
  const auto excess = error - (scale * (steps / 256.0) + 1e-30);
  EXPECT_LE(excess.max().item<double>(), 0.0)
      << what << ": largest difference " << error.max().item<double>() << " where the bound is "
      << (scale * (steps / 256.0)).flatten()[excess.flatten().argmax()].item<double>();
}

bool amx_here() {
  return cpu_isa() >= CpuIsa::kAmx;
}

std::string no_amx_reason() {
  return std::string("no AMX tiles here (VIT_CPU_ISA allows ") + cpu_isa_name(cpu_isa()) +
         "): attention_heads_merged runs LibTorch's operators, tested by "
         "OtherHeadsRunLibTorchsOperators";
}

TEST(AttentionHeads, OwnKernelRunsWithAmxOnContiguousBf16HeadsOfWidthsInThirtyTwos) {
  const auto h = random_heads(2, 3, 65, 65, 64, torch::kBFloat16, 1);
  EXPECT_EQ(attention_uses_own_kernel(h.q, h.k, h.v), amx_here());
  const auto cls = random_heads(2, 3, 1, 65, 32, torch::kBFloat16, 2);
  EXPECT_EQ(attention_uses_own_kernel(cls.q, cls.k, cls.v), amx_here());

  const auto f = random_heads(2, 3, 65, 65, 64, torch::kFloat, 3);
  EXPECT_FALSE(attention_uses_own_kernel(f.q, f.k, f.v));
  EXPECT_FALSE(attention_uses_own_kernel(h.q, h.k.transpose(0, 1), h.v.transpose(0, 1)));
  const auto narrow = random_heads(1, 2, 9, 9, 48, torch::kBFloat16, 4);
  EXPECT_FALSE(attention_uses_own_kernel(narrow.q, narrow.k, narrow.v));
  const auto wide = random_heads(1, 1, 9, 9, 544, torch::kBFloat16, 5);
  EXPECT_FALSE(attention_uses_own_kernel(wide.q, wide.k, wide.v));
  EXPECT_FALSE(attention_uses_own_kernel(h.q, h.k, h.v.narrow(2, 0, 64).contiguous()));
  EXPECT_FALSE(attention_uses_own_kernel(h.q[0], h.k[0], h.v[0]));
}

// Against double, from the same bf16 inputs: every result within four bf16
// steps of the scale its roundings reach it through (the probabilities and
// the scores' gradient rounded once each, then the result itself). Shapes:
// the CPU benchmark job's heads, the class token's query alone, one key,
// widths 32, 64 and 96, more than 128 tokens, and heads shared unevenly
// between 2 threads.
TEST(AttentionHeads, Bf16HeadsMatchDoubleWithinTheirRoundings) {
  if (!amx_here()) GTEST_SKIP() << no_amx_reason();
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  struct Shape {
    int64_t batch, heads, queries, keys, dim;
  };
  for (const Shape& s :
       {Shape{2, 3, 65, 65, 64}, Shape{3, 2, 1, 65, 64}, Shape{2, 2, 7, 1, 32},
        Shape{1, 2, 17, 17, 32}, Shape{2, 1, 5, 40, 96}, Shape{1, 1, 150, 150, 64}}) {
    const auto h = random_heads(s.batch, s.heads, s.queries, s.keys, s.dim, torch::kBFloat16,
                                uint64_t(s.queries * 1000 + s.keys));
    const double scale = 1.0 / std::sqrt(double(s.dim));
    ASSERT_TRUE(attention_uses_own_kernel(h.q, h.k, h.v));
    const auto o = run_ours(h, scale);
    const auto r = reference(h, scale);
    const std::string at = std::to_string(s.batch) + "x" + std::to_string(s.heads) + " heads, " +
                           std::to_string(s.queries) + " queries, " + std::to_string(s.keys) +
                           " keys, width " + std::to_string(s.dim);
    for (const auto& t : {o.out, o.dq, o.dk, o.dv})
      EXPECT_EQ(t.scalar_type(), torch::kBFloat16) << at;
    expect_within_steps(o.out, r.exact.out, r.scale_of.out, 4, "out, " + at);
    expect_within_steps(o.dq, r.exact.dq, r.scale_of.dq, 4, "dq, " + at);
    expect_within_steps(o.dk, r.exact.dk, r.scale_of.dk, 4, "dk, " + at);
    expect_within_steps(o.dv, r.exact.dv, r.scale_of.dv, 4, "dv, " + at);
  }
  at::set_num_threads(threads);
}

// Without a graph to record the forward runs alone, and gives the same
// bits; so do 1 and 2 threads (each head is computed the same way on
// whichever thread takes it).
TEST(AttentionHeads, InferenceAndThreadCountsGiveTheSameBits) {
  if (!amx_here()) GTEST_SKIP() << no_amx_reason();
  const int threads = at::get_num_threads();
  const auto h = random_heads(3, 3, 65, 65, 64, torch::kBFloat16, 7);
  at::set_num_threads(1);
  const auto one_thread = run_ours(h, 0.125);
  at::set_num_threads(2);
  const auto two_threads = run_ours(h, 0.125);
  torch::Tensor inference;
  {
    torch::NoGradGuard no_grad;
    inference = attention_heads_merged(h.q, h.k, h.v, 0.125);
  }
  at::set_num_threads(threads);
  EXPECT_TRUE(one_thread.out.equal(two_threads.out));
  EXPECT_TRUE(one_thread.dq.equal(two_threads.dq));
  EXPECT_TRUE(one_thread.dk.equal(two_threads.dk));
  EXPECT_TRUE(one_thread.dv.equal(two_threads.dv));
  EXPECT_TRUE(inference.equal(one_thread.out));
}

// A thread's scratch serves head after head: a NaN and an infinity in one
// head spoil that head only, and every other head gets the bits it gets
// alone.
TEST(AttentionHeads, OneHeadsValuesNeverReachAnother) {
  if (!amx_here()) GTEST_SKIP() << no_amx_reason();
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  auto h = random_heads(2, 2, 33, 33, 64, torch::kBFloat16, 8);
  h.v[0][0][5][7] = std::numeric_limits<float>::infinity();
  h.q[0][0][3][1] = std::numeric_limits<float>::quiet_NaN();
  const auto o = run_ours(h, 0.125);
  const auto alone = [&](int64_t b, int64_t head) {
    Heads one{h.q.narrow(0, b, 1).narrow(1, head, 1).contiguous(),
              h.k.narrow(0, b, 1).narrow(1, head, 1).contiguous(),
              h.v.narrow(0, b, 1).narrow(1, head, 1).contiguous(),
              h.dout.narrow(0, b, 1).narrow(2, head * 64, 64).contiguous()};
    return run_ours(one, 0.125);
  };
  EXPECT_FALSE(torch::isfinite(o.out[0].narrow(1, 0, 64)).all().item<bool>());
  for (const auto& [b, head] : {std::pair<int64_t, int64_t>{0, 1}, {1, 0}, {1, 1}}) {
    const auto expected = alone(b, head);
    EXPECT_TRUE(o.out[b].narrow(1, head * 64, 64).equal(expected.out[0]))
        << "batch " << b << ", head " << head;
    EXPECT_TRUE(o.dq[b][head].equal(expected.dq[0][0])) << "batch " << b << ", head " << head;
    EXPECT_TRUE(o.dk[b][head].equal(expected.dk[0][0])) << "batch " << b << ", head " << head;
    EXPECT_TRUE(o.dv[b][head].equal(expected.dv[0][0])) << "batch " << b << ", head " << head;
  }
  at::set_num_threads(threads);
}

// fp32 heads, strided heads and widths the kernel does not take run
// LibTorch's operators, on every CPU: softmax(scale q k^T) v with the heads
// merged, and its gradients, as double computes them within float's error.
TEST(AttentionHeads, OtherHeadsRunLibTorchsOperators) {
  auto h = random_heads(2, 3, 9, 11, 48, torch::kFloat, 9);
  ASSERT_FALSE(attention_uses_own_kernel(h.q, h.k, h.v));
  const auto o = run_ours(h, 0.3);
  const auto r = reference(h, 0.3);
  const double float_steps = 256 * 1e-5;  // 1e-5 of the scale
  expect_within_steps(o.out, r.exact.out, r.scale_of.out, float_steps, "fp32 out");
  expect_within_steps(o.dq, r.exact.dq, r.scale_of.dq, float_steps, "fp32 dq");
  expect_within_steps(o.dk, r.exact.dk, r.scale_of.dk, float_steps, "fp32 dk");
  expect_within_steps(o.dv, r.exact.dv, r.scale_of.dv, float_steps, "fp32 dv");

  Heads strided{h.q.transpose(0, 1).contiguous().transpose(0, 1), h.k, h.v, h.dout};
  ASSERT_FALSE(strided.q.is_contiguous());
  EXPECT_TRUE(torch::allclose(run_ours(strided, 0.3).out, o.out, /*rtol=*/1e-6, /*atol=*/1e-6));
}

}  // namespace
}  // namespace vit::attention_test
