// The private drawing helpers of src/io.
#include "../../src/io/draw.hpp"

#include <gtest/gtest.h>
#include <opencv2/imgproc.hpp>

namespace {

using vit::io::detail::Font;

TEST(DrawTest, FitTextKeepsShortTextAsIs) {
  Font font{0.5};
  EXPECT_EQ(vit::io::detail::fit_text("cat", 100, 2, 0.35, font),
            (std::vector<std::string>{"cat"}));
  EXPECT_DOUBLE_EQ(font.scale, 0.5);
}

TEST(DrawTest, FitTextWrapsBeforeShrinkingFar) {
  Font font{0.5};
  const int width = vit::io::detail::text_width("brown bear,", font) + 2;
  const auto lines = vit::io::detail::fit_text("brown bear, bruin", width, 2, 0.35, font);
  EXPECT_EQ(lines, (std::vector<std::string>{"brown bear,", "bruin"}));
  EXPECT_DOUBLE_EQ(font.scale, 0.5);
}

TEST(DrawTest, FitTextCutsWhatCannotFit) {
  Font font{0.5};
  const auto lines = vit::io::detail::fit_text("abcdefghijklmnopqrstuvwxyz", 60, 1, 0.35, font);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].substr(lines[0].size() - 2), "..");
  EXPECT_LE(vit::io::detail::text_width(lines[0], font), 60);
  EXPECT_DOUBLE_EQ(font.scale, 0.35);
  // Dropped lines are marked too, and an explicit newline always breaks.
  Font small{0.5};
  const auto kept = vit::io::detail::fit_text("one\ntwo\nthree", 200, 2, 0.35, small);
  EXPECT_EQ(kept, (std::vector<std::string>{"one", "two.."}));
  EXPECT_EQ(vit::io::detail::truncate_text("abc", 1, small), "");
}

TEST(DrawTest, PaletteIsTab10AndCycles) {
  EXPECT_EQ(vit::io::detail::palette_color(0), cv::Scalar(31, 119, 180));
  EXPECT_EQ(vit::io::detail::palette_color(3), cv::Scalar(214, 39, 40));
  EXPECT_EQ(vit::io::detail::palette_color(10), vit::io::detail::palette_color(0));
  EXPECT_EQ(vit::io::detail::palette_color(-1), vit::io::detail::palette_color(9));
}

TEST(DrawTest, VerticalTextIsTallerThanWide) {
  cv::Mat canvas(200, 100, CV_8UC3, cv::Scalar::all(255));
  vit::io::detail::put_text_vertical(canvas, "mean distance", 50, 100, Font{0.5},
                                     cv::Scalar(0, 0, 0));
  cv::Mat gray;
  cv::cvtColor(canvas, gray, cv::COLOR_RGB2GRAY);
  const cv::Rect ink = cv::boundingRect(gray < 128);
  EXPECT_GT(ink.height, 3 * ink.width);
  EXPECT_NEAR(ink.y + ink.height / 2.0, 100, 3);  // centred where asked
}

}  // namespace
