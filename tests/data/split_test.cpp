#include "vit/data/split.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/error.hpp"

namespace {

// 100 labels: 60 of class 0, 30 of class 1, 10 of class 2, interleaved.
at::Tensor skewed_labels() {
  auto labels = torch::zeros({100}, torch::kInt64);
  for (int64_t i = 0; i < 100; ++i)
    labels[i] = i % 10 == 0 ? 2 : (i % 10 < 4 ? 1 : 0);
  return labels;
}

TEST(StratifiedPick, KeepsEveryClassShare) {
  const auto labels = skewed_labels();
  auto split = vit::data::stratified_pick(labels, 3, /*count=*/20, /*seed=*/5);
  ASSERT_EQ(split.picked.size(0), 20);
  ASSERT_EQ(split.rest.size(0), 80);
  const auto counts = torch::bincount(labels.index_select(0, split.picked), {}, 3);
  EXPECT_TRUE(torch::equal(counts, torch::tensor({12, 6, 2}, torch::kInt64)));
}

TEST(StratifiedPick, GivesTheRemainderToTheLargestFractions) {
  // count 7 of (60, 30, 10): exact shares 4.2, 2.1, 0.7 -> floors 4, 2, 0; one left -> class 2.
  auto split = vit::data::stratified_pick(skewed_labels(), 3, 7, 1);
  const auto counts = torch::bincount(skewed_labels().index_select(0, split.picked), {}, 3);
  EXPECT_TRUE(torch::equal(counts, torch::tensor({4, 2, 1}, torch::kInt64)));
}

TEST(StratifiedPick, SpreadsTiesOverAllClasses) {
  // 5 of 20 equal classes: each class's share is 0.25, so 5 classes get one
  // image; which ones follows the seed, not the class order.
  const auto labels = torch::arange(100, torch::kInt64).remainder(20);
  auto classes_of = [&](uint64_t seed) {
    const auto picked = vit::data::stratified_pick(labels, 20, 5, seed).picked;
    return std::get<0>(labels.index_select(0, picked).sort());
  };
  const auto a = classes_of(1);
  EXPECT_EQ(std::get<0>(at::_unique(a)).size(0), 5);
  EXPECT_FALSE(torch::equal(a, torch::arange(5, torch::kInt64)));
  EXPECT_FALSE(torch::equal(a, classes_of(2)));
}

TEST(StratifiedPick, IsDeterministicDisjointAndSeeded) {
  const auto labels = skewed_labels();
  auto a = vit::data::stratified_pick(labels, 3, 20, 5);
  auto b = vit::data::stratified_pick(labels, 3, 20, 5);
  auto c = vit::data::stratified_pick(labels, 3, 20, 6);
  EXPECT_TRUE(torch::equal(a.picked, b.picked));
  EXPECT_FALSE(torch::equal(a.picked, c.picked));
  const auto all = std::get<0>(torch::sort(torch::cat({a.picked, a.rest})));
  EXPECT_TRUE(torch::equal(all, torch::arange(100, torch::kInt64)));        // disjoint and complete
  EXPECT_TRUE(torch::equal(a.picked, std::get<0>(torch::sort(a.picked))));  // ascending
}

TEST(StratifiedPick, EdgeCountsAndErrors) {
  const auto labels = skewed_labels();
  EXPECT_EQ(vit::data::stratified_pick(labels, 3, 0, 0).picked.size(0), 0);
  EXPECT_EQ(vit::data::stratified_pick(labels, 3, 100, 0).rest.size(0), 0);
  try {
    vit::data::stratified_pick(labels, 3, 101, 0);
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_STREQ(e.what(), "stratified split: cannot pick 101 of 100 images");
  }
  EXPECT_THROW(vit::data::stratified_pick(labels, 2, 10, 0), vit::Error);  // label 2 >= 2 classes
}

}  // namespace
