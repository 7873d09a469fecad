#include "vit/data/rng.hpp"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace {

TEST(Rng, MatchesSplitmix64ReferenceValues) {
  // Reference outputs of splitmix64 seeded with 1234567 (Vigna's splitmix64.c).
  vit::data::Rng rng(1234567);
  EXPECT_EQ(rng.next(), 6457827717110365317ULL);
  EXPECT_EQ(rng.next(), 3203168211198807973ULL);
}

TEST(Rng, DerivedStreamsDependOnEveryKeyAndItsOrder) {
  auto a = vit::data::Rng::derive({1, 2}).next();
  EXPECT_EQ(a, vit::data::Rng::derive({1, 2}).next());
  EXPECT_NE(a, vit::data::Rng::derive({2, 1}).next());
  EXPECT_NE(a, vit::data::Rng::derive({1, 3}).next());
}

TEST(Rng, BelowStaysInRangeAndCoversIt) {
  vit::data::Rng rng(3);
  std::vector<int> seen(5, 0);
  for (int i = 0; i < 1000; ++i) {
    const auto v = rng.below(5);
    ASSERT_LT(v, 5u);
    ++seen[v];
  }
  for (int count : seen)
    EXPECT_GT(count, 150);  // 200 expected each
}

TEST(Rng, BetaHasTheRightMean) {
  // Beta(a, b) has mean a / (a + b): 0.2 / 1.0 here; 20000 draws give about +-0.003.
  vit::data::Rng rng(11);
  double sum = 0.0;
  for (int i = 0; i < 20000; ++i) {
    const double x = rng.beta(0.2, 0.8);
    ASSERT_GE(x, 0.0);
    ASSERT_LE(x, 1.0);
    sum += x;
  }
  EXPECT_NEAR(sum / 20000, 0.2, 0.01);
}

}  // namespace
