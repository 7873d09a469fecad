#include "vit/io/figures.hpp"

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "picture_checks.hpp"

#include "vit/error.hpp"

namespace {

using vit::io::testing::count_color;

TEST(FiguresTest, TrainingCurvesHaveTwoPanels) {
  vit::io::TrainingCurves curves;
  curves.train_step = {10, 20, 30, 40};
  curves.train_loss = {2.3, 2.0, 1.8, 1.7};
  curves.val_step = {20, 40};
  curves.val_loss = {2.1, 1.9};
  curves.val_acc = {0.3, 0.4};
  const at::Tensor picture = vit::io::plot_training_curves(curves);
  ASSERT_EQ(picture.sizes(), (c10::IntArrayRef{3, 500, 1000}));
  // Train loss in tab10 blue, validation in tab10 orange (both panels).
  const at::Tensor left = picture.narrow(2, 0, 500);
  const at::Tensor right = picture.narrow(2, 500, 500);
  EXPECT_GT(count_color(left, {31, 119, 180}), 50);
  EXPECT_GT(count_color(left, {255, 127, 14}), 50);
  EXPECT_EQ(count_color(right, {31, 119, 180}), 0);
  EXPECT_GT(count_color(right, {255, 127, 14}), 50);
  // Before the first validation there is nothing to plot, and that is fine.
  EXPECT_EQ(vit::io::plot_training_curves({}).sizes(), (c10::IntArrayRef{3, 500, 1000}));
}

TEST(FiguresTest, AttentionDistanceHasOneColourPerHead) {
  const at::Tensor distance = torch::tensor({2.0, 4.0, 6.0, 3.0, 5.0, 7.0}).view({2, 3});
  const at::Tensor picture = vit::io::plot_attention_distance(distance);
  ASSERT_EQ(picture.sizes(), (c10::IntArrayRef{3, 520, 720}));
  EXPECT_GT(count_color(picture, {31, 119, 180}), 30);  // head 1
  EXPECT_GT(count_color(picture, {255, 127, 14}), 30);  // head 2
  EXPECT_GT(count_color(picture, {44, 160, 44}), 30);   // head 3
  EXPECT_EQ(count_color(picture, {214, 39, 40}), 0);    // no head 4
  try {
    vit::io::plot_attention_distance(torch::zeros({4}));
    ADD_FAILURE() << "1-D distance accepted";
  } catch (const vit::Error& e) {
    EXPECT_NE(std::string(e.what()).find("distance is [4], expected (L, H)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
