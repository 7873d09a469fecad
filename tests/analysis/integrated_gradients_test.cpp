#include "vit/analysis/integrated_gradients.hpp"

#include <cmath>

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "eight_pixel_model.hpp"
#include "error_of.hpp"
#include "vit/analysis/saliency.hpp"

namespace vit {
namespace {

using testing::error_of;

TEST(GaussLegendre, MatchesTheClosedFormsForOneToThreePoints) {
  const auto one = gauss_legendre(1);
  EXPECT_EQ(one.points, std::vector<double>{0.5});
  EXPECT_EQ(one.weights, std::vector<double>{1.0});
  const auto two = gauss_legendre(2);
  ASSERT_EQ(two.points.size(), 2u);
  EXPECT_NEAR(two.points[0], 0.5 - 0.5 / std::sqrt(3.0), 1e-15);
  EXPECT_NEAR(two.points[1], 0.5 + 0.5 / std::sqrt(3.0), 1e-15);
  EXPECT_NEAR(two.weights[0], 0.5, 1e-15);
  EXPECT_NEAR(two.weights[1], 0.5, 1e-15);
  const auto three = gauss_legendre(3);  // numpy: leggauss(3) on [0, 1]
  const double r = 0.5 * std::sqrt(0.6);
  const std::vector<double> points = {0.5 - r, 0.5, 0.5 + r},
                            weights = {5 / 18.0, 8 / 18.0, 5 / 18.0};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(three.points[i], points[i], 1e-14) << i;
    EXPECT_NEAR(three.weights[i], weights[i], 1e-14) << i;
  }
  EXPECT_EQ(error_of([] { gauss_legendre(0); }),
            "Gauss-Legendre rule of 0 points, expected at least 1");
}

// n points integrate t^k over [0, 1] exactly up to k = 2n - 1, and not k = 2n.
TEST(GaussLegendre, IsExactForPolynomialsUpToDegree2nMinus1) {
  for (const int64_t n : {4, 7, 32, 64}) {
    const auto rule = gauss_legendre(n);
    double total = 0;
    for (size_t i = 0; i < rule.points.size(); ++i) {
      total += rule.weights[i];
      EXPECT_GT(rule.points[i], 0.0);
      EXPECT_LT(rule.points[i], 1.0);
      if (i > 0) {
        EXPECT_GT(rule.points[i], rule.points[i - 1]);
      }
    }
    EXPECT_NEAR(total, 1.0, 1e-13) << n;
    const auto integral = [&](int64_t k) {
      double sum = 0;
      for (size_t i = 0; i < rule.points.size(); ++i)
        sum += rule.weights[i] * std::pow(rule.points[i], double(k));
      return sum;
    };
    for (int64_t k = 0; k < std::min<int64_t>(2 * n, 40); ++k)
      EXPECT_NEAR(integral(k), 1.0 / double(k + 1), 1e-13) << n << " points, t^" << k;
    if (n == 4) {
      EXPECT_NEAR(integral(8) - 1.0 / 9.0, -2.2675736961533e-05, 1e-12);  // numpy's too
    }
  }
}

class AveragedGradients : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::eight_pixel_model(2);
    x_ = torch::randn({3, 3, 8, 8});
    classes_ = torch::tensor({0, 2, 1});
  }
  // d logit / d x at `at`, for classes_, image by image.
  torch::Tensor gradient_at(const torch::Tensor& at) {
    auto leaf = at.clone().requires_grad_(true);
    model_->forward(leaf).gather(1, classes_.unsqueeze(1)).sum().backward();
    return leaf.grad();
  }
  VisionTransformer model_{nullptr};
  torch::Tensor x_, classes_;
};

// Against the midpoint rule with 2,000 steps, independent of the quadrature:
// 32 Gauss-Legendre points agree to float precision, and the attributions
// sum to f(x) - f(baseline).
TEST_F(AveragedGradients, IntegratedGradientsAreThePathIntegralAndComplete) {
  const auto baseline = 0.3 * torch::randn({3, 8, 8});  // one image, broadcast to the batch
  const Attributions ig = integrated_gradients(model_, x_, classes_, baseline, 32);
  ASSERT_EQ(ig.values.sizes(), x_.sizes());
  const int64_t steps = 2000;
  auto integral = torch::zeros_like(x_);
  for (int64_t i = 0; i < steps; ++i) {
    const double a = (double(i) + 0.5) / double(steps);
    integral += gradient_at(baseline + a * (x_ - baseline)) / double(steps);
  }
  const auto expected = (x_ - baseline) * integral;
  const double scale = expected.abs().max().item<double>();
  EXPECT_LT((ig.values - expected).abs().max().item<double>(), 1e-4 * scale);
  ASSERT_EQ(ig.completeness_error.sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(ig.completeness_error.scalar_type(), torch::kDouble);
  EXPECT_LT(ig.completeness_error.abs().max().item<double>(), 1e-4) << ig.completeness_error;
  // One point is the gradient at the middle of the path, and not complete.
  const Attributions coarse = integrated_gradients(model_, x_, classes_, baseline, 1);
  EXPECT_TRUE(torch::allclose(
      coarse.values, (x_ - baseline) * gradient_at(baseline + 0.5 * (x_ - baseline)), 1e-5, 1e-6));
  EXPECT_GT(coarse.completeness_error.abs().max().item<double>(), 1e-3);
  EXPECT_EQ(error_of([&] { integrated_gradients(model_, x_, classes_, baseline, 0); }),
            "integrated gradients: --steps 0, expected at least 1");
}

TEST_F(AveragedGradients, TheSaliencyMapSumsTheChannelsWithTheirSignAndTheBaselineDefaultsTo0) {
  GradientAveraging averaging;
  averaging.steps = 8;
  const Saliency s =
      compute_saliency(model_, x_, SaliencyMethod::kIntegratedGradients, classes_, {}, averaging);
  const Attributions ig =
      integrated_gradients(model_, x_, classes_, torch::zeros({3, 8, 8}), averaging.steps);
  EXPECT_TRUE(torch::allclose(s.maps, ig.values.sum(1), 1e-6, 1e-7));
  EXPECT_LT(s.maps.min().item<double>(), 0.0);  // signed
  EXPECT_TRUE(torch::allclose(s.completeness_error, ig.completeness_error, 1e-6, 1e-9));
  EXPECT_TRUE(torch::equal(s.classes, classes_));
  // Without classes, the predicted ones.
  const Saliency predicted =
      compute_saliency(model_, x_, SaliencyMethod::kIntegratedGradients, {}, {}, averaging);
  EXPECT_TRUE(torch::equal(predicted.classes, model_->forward(x_).argmax(1)));
}

// Without noise every copy is x itself: the mean is the grad map.
TEST_F(AveragedGradients, SmoothGradWithoutNoiseIsTheGradMap) {
  const auto grad = compute_saliency(model_, x_, SaliencyMethod::kGrad, classes_).maps;
  const auto smooth = smoothgrad(model_, x_, classes_, /*noise=*/0.0, /*samples=*/3, /*seed=*/1);
  EXPECT_TRUE(torch::allclose(smooth, grad, 1e-6, 1e-7));
}

TEST_F(AveragedGradients, SmoothGradAveragesTheGradMapOverSeededNoise) {
  const double noise = 0.2;
  const auto smooth = smoothgrad(model_, x_, classes_, noise, /*samples=*/4, /*seed=*/7);
  EXPECT_TRUE(torch::equal(smooth, smoothgrad(model_, x_, classes_, noise, 4, 7)));
  EXPECT_FALSE(torch::allclose(smooth, smoothgrad(model_, x_, classes_, noise, 4, 8)));
  // The same noise, drawn here: sd = noise x each image's max - min.
  auto generator = at::detail::createCPUGenerator(7);
  const auto flat = x_.flatten(1);
  const auto sigma = (noise * (flat.amax(1) - flat.amin(1))).view({-1, 1, 1, 1});
  auto expected = torch::zeros({3, 8, 8});
  for (int s = 0; s < 4; ++s)
    expected +=
        gradient_at(x_ + sigma * at::randn(x_.sizes(), generator, torch::kFloat)).abs().amax(1) /
        4.0;
  EXPECT_TRUE(torch::allclose(smooth, expected, 1e-5, 1e-6));
  EXPECT_EQ(error_of([&] { smoothgrad(model_, x_, classes_, noise, 0, 7); }),
            "smoothgrad: --samples-per-image 0, expected at least 1");
  EXPECT_EQ(error_of([&] { smoothgrad(model_, x_, classes_, -0.1, 4, 7); }),
            "smoothgrad: --noise -0.1, expected a fraction of the input's range >= 0");
}

}  // namespace
}  // namespace vit
