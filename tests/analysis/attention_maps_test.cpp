#include "vit/analysis/attention_maps.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"

namespace vit {
namespace {

using testing::error_of;

// One layer, one image, two heads, tokens [class, p00, p01, p10, p11]: entry
// (h, q, k) = 100 h + 10 q + k, so every value says where it came from.
std::vector<torch::Tensor> labelled_attention() {
  const auto h = torch::arange(2, torch::kDouble).view({1, 2, 1, 1});
  const auto q = torch::arange(5, torch::kDouble).view({1, 1, 5, 1});
  const auto k = torch::arange(5, torch::kDouble).view({1, 1, 1, 5});
  return {100 * h + 10 * q + k, 100 * h + 10 * q + k + 1000};  // two layers
}

TEST(AttentionMaps, ClassTokenRowDropsTheClassColumn) {
  const auto maps = attention_query_maps(labelled_attention(), AttentionQuery{});
  ASSERT_EQ(maps.sizes(), (std::vector<int64_t>{1, 2, 2, 2, 2}));
  // layer 0, head 1: row 0, keys 1..4 -> 101 102 / 103 104.
  EXPECT_TRUE(torch::equal(
      maps[0][0][1], torch::tensor({101.0, 102.0, 103.0, 104.0}, torch::kDouble).view({2, 2})));
  EXPECT_EQ(maps[0][1][0][0][0].item<double>(), 1001);
}

TEST(AttentionMaps, PatchMeanAveragesThePatchRows) {
  AttentionQuery query;
  query.kind = AttentionQuery::Kind::kPatchMean;
  const auto maps = attention_query_maps(labelled_attention(), query);
  // rows 1..4 have q = 1..4, mean 2.5 -> 25 + k.
  EXPECT_TRUE(torch::equal(maps[0][0][0],
                           torch::tensor({26.0, 27.0, 28.0, 29.0}, torch::kDouble).view({2, 2})));
}

TEST(AttentionMaps, PatchQueryIsRowMajor) {
  const auto maps = attention_query_maps(labelled_attention(), parse_attention_query("1,0"));
  // patch (1, 0) is token 1 + 1*2 + 0 = 3.
  EXPECT_TRUE(torch::equal(maps[0][0][0],
                           torch::tensor({31.0, 32.0, 33.0, 34.0}, torch::kDouble).view({2, 2})));
}

TEST(AttentionMaps, QueriesParseAndNameThemselves) {
  EXPECT_EQ(attention_query_name(parse_attention_query(" 3, 4")), "3,4");
  EXPECT_EQ(attention_query_name(AttentionQuery{}), "class_token");
  EXPECT_EQ(error_of([] { parse_attention_query("3;4"); }),
            "query '3;4' is not a patch 'i,j'; expected row and column counted from 0, e.g. 3,4");
  EXPECT_EQ(error_of([] { parse_attention_query("-1,2"); }),
            "query '-1,2' is not a patch 'i,j'; expected row and column counted from 0, e.g. 3,4");
  EXPECT_EQ(
      error_of([] { attention_query_maps(labelled_attention(), parse_attention_query("2,0")); }),
      "attention maps: query patch 2,0 is outside the 2x2 patch grid; rows and columns "
      "count from 0 to 1");
}

}  // namespace
}  // namespace vit
