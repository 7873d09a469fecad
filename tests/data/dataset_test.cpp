#include "vit/data/dataset.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/error.hpp"

namespace {

vit::data::Dataset make(std::vector<int64_t> labels, const std::string& source) {
  vit::data::Dataset d;
  const auto n = static_cast<int64_t>(labels.size());
  d.images = torch::arange(n * 4, torch::kInt64).to(torch::kUInt8).view({n, 1, 2, 2});
  d.labels = torch::tensor(labels, torch::kInt64).view({n});
  d.classes = {"x", "y", "z"};
  d.source = source;
  return d;
}

TEST(Dataset, SubsetPicksImagesAndLabelsTogether) {
  const auto d = make({0, 1, 2}, "s");
  const auto sub = d.subset(torch::tensor({2, 0}, torch::kInt64));
  EXPECT_TRUE(torch::equal(sub.labels, torch::tensor({2, 0}, torch::kInt64)));
  EXPECT_EQ(sub.images[0][0][0][0].item<int>(), 8);
  EXPECT_EQ(sub.classes[2], "z");
}

TEST(Dataset, ClassCountsAndRangeCheck) {
  const auto counts = vit::data::class_counts(torch::tensor({0, 2, 2}, torch::kInt64), 3, "f");
  EXPECT_TRUE(torch::equal(counts, torch::tensor({1, 0, 2}, torch::kInt64)));
  try {
    vit::data::class_counts(torch::tensor({0, -1}, torch::kInt64), 3, "f.bin");
    FAIL() << "no error";
  } catch (const vit::Error& e) {
    EXPECT_STREQ(e.what(), "f.bin: label -1 at index 1 is outside 0..2");
  }
}

TEST(Dataset, ConcatJoinsAndChecksShapes) {
  const auto joined = vit::data::concat({make({0}, "a"), make({1, 2}, "b")}, "ab");
  EXPECT_EQ(joined.size(), 3);
  EXPECT_EQ(joined.images[2][0][1][1].item<int>(), 7);
  auto odd = make({0}, "c");
  odd.images = torch::zeros({1, 3, 2, 2}, torch::kUInt8);
  EXPECT_THROW(vit::data::concat({make({0}, "a"), odd}, "ac"), vit::Error);
}

}  // namespace
