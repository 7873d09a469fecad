#include "vit/io/plot.hpp"

#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "picture_checks.hpp"

namespace {

using vit::io::testing::count_color;
using vit::io::testing::rgb_at;

using vit::io::Panel;
using vit::io::PlotOptions;
using vit::io::Series;
using vit::io::SeriesStyle;

const std::vector<int> kWhite = {255, 255, 255};
const std::vector<int> kTabBlue = {31, 119, 180};
const std::vector<int> kTabRed = {214, 39, 40};

TEST(PlotTest, NiceTicksUseRoundSteps) {
  EXPECT_EQ(vit::io::nice_ticks(0.0, 1.0, 6), (std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1.0}));
  EXPECT_EQ(vit::io::nice_ticks(-0.3, 2.6, 4), (std::vector<double>{0, 1, 2}));
  std::vector<double> layers;
  for (int l = 1; l <= 12; ++l)
    layers.push_back(l);
  EXPECT_EQ(vit::io::nice_ticks(0.5, 12.5, 12, /*integer=*/true), layers);
  EXPECT_EQ(vit::io::nice_ticks(0.5, 12.5, 5, /*integer=*/true), (std::vector<double>{5, 10}));
  // Whole steps only, even when a finer step would fit.
  EXPECT_EQ(vit::io::nice_ticks(0.6, 3.4, 10, /*integer=*/true), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(vit::io::nice_ticks(0.0, 4000.0, 5), (std::vector<double>{0, 1000, 2000, 3000, 4000}));
  EXPECT_EQ(vit::io::nice_ticks(0.41, 0.93, 6), (std::vector<double>{0.5, 0.6, 0.7, 0.8, 0.9}));
  EXPECT_EQ(vit::io::nice_ticks(3.0, 3.0, 5), (std::vector<double>{3.0}));
  EXPECT_TRUE(vit::io::nice_ticks(NAN, 1.0, 5).empty());
}

TEST(PlotTest, TickLabelsCarryTheDecimalsTheStepNeeds) {
  EXPECT_EQ(vit::io::format_tick(0.25, 0.05), "0.25");
  EXPECT_EQ(vit::io::format_tick(0.4, 0.2), "0.4");
  EXPECT_EQ(vit::io::format_tick(3, 1), "3");
  EXPECT_EQ(vit::io::format_tick(2500, 500), "2500");
  EXPECT_EQ(vit::io::format_tick(5000, 5000), "5k");  // the step picks the unit for the whole axis
  EXPECT_EQ(vit::io::format_tick(20000, 5000), "20k");
  EXPECT_EQ(vit::io::format_tick(0, 5000), "0");
  EXPECT_EQ(vit::io::format_tick(1.5e6, 5e5), "1.5M");
  EXPECT_EQ(vit::io::format_tick(-1e-17, 0.2), "0.0");  // no "-0.0"
  EXPECT_EQ(vit::io::format_tick(3e-5, 1e-5), "3.0e-05");
}

TEST(PlotTest, MapsDataToPixels) {
  vit::io::Axes axes;
  axes.left = 100, axes.top = 50, axes.width = 200, axes.height = 100;
  axes.x_min = 0, axes.x_max = 4, axes.y_min = -1, axes.y_max = 1;
  EXPECT_EQ(axes.to_pixel(1, 0), (std::pair<double, double>{150.0, 100.0}));
  EXPECT_EQ(axes.to_pixel(4, -1), (std::pair<double, double>{300.0, 150.0}));
}

TEST(PlotTest, DrawsAPointWhereTheLayoutSays) {
  Panel panel;
  panel.title = "one point";
  panel.x_label = "x";
  panel.y_label = "y";
  panel.x_min = 0, panel.x_max = 4, panel.y_min = 0, panel.y_max = 6;
  panel.series.push_back({"point", {2}, {3}, SeriesStyle::kMarkers, /*color=*/3});
  PlotOptions options;
  options.panel_width = 400;
  options.height = 300;
  const at::Tensor picture = vit::io::render_plot({panel}, options);
  ASSERT_EQ(picture.sizes(), (c10::IntArrayRef{3, 300, 400}));
  EXPECT_EQ(rgb_at(picture, 0, 0), kWhite);
  EXPECT_EQ(rgb_at(picture, 299, 399), kWhite);

  const vit::io::Axes axes = vit::io::plot_layout({panel}, options)[0];
  EXPECT_EQ(axes.x_min, 0.0);
  EXPECT_EQ(axes.y_max, 6.0);
  const auto [column, row] = axes.to_pixel(2, 3);
  EXPECT_DOUBLE_EQ(column, axes.left + axes.width / 2.0);  // the middle of the axes
  EXPECT_DOUBLE_EQ(row, axes.top + axes.height / 2.0);
  EXPECT_EQ(rgb_at(picture, static_cast<int64_t>(row), static_cast<int64_t>(column)), kTabRed);
  // The dot is small: 10 pixels away the picture is background or grid again.
  EXPECT_NE(rgb_at(picture, static_cast<int64_t>(row), static_cast<int64_t>(column) + 10), kTabRed);
}

TEST(PlotTest, LinesBreakAtNaN) {
  Panel panel;
  panel.x_min = 0, panel.x_max = 4, panel.y_min = 0, panel.y_max = 2;
  panel.legend = false;
  panel.series.push_back({"", {0, 1, 2, 3, 4}, {1, 1, NAN, 1, 1}, SeriesStyle::kLine});
  PlotOptions options;
  options.panel_width = 400;
  options.height = 300;
  const at::Tensor picture = vit::io::render_plot({panel}, options);
  const vit::io::Axes axes = vit::io::plot_layout({panel}, options)[0];
  auto color_at = [&](double x) {
    const auto [column, row] = axes.to_pixel(x, 1);
    // The 2-pixel line covers the row at or just above the exact position.
    const auto a = rgb_at(picture, static_cast<int64_t>(std::floor(row)), std::lround(column));
    const auto b = rgb_at(picture, static_cast<int64_t>(std::floor(row)) - 1, std::lround(column));
    return std::min(std::abs(a[0] - kTabBlue[0]) + std::abs(a[2] - kTabBlue[2]),
                    std::abs(b[0] - kTabBlue[0]) + std::abs(b[2] - kTabBlue[2]));
  };
  EXPECT_LT(color_at(0.5), 30);
  EXPECT_LT(color_at(3.5), 30);
  EXPECT_GT(color_at(2.0), 100);  // the gap around the NaN
}

TEST(PlotTest, DegenerateDataStillRenders) {
  Panel single;
  single.series.push_back({"one", {3}, {7}, SeriesStyle::kMarkers});
  Panel flat;
  flat.series.push_back({"flat", {0, 1, 2}, {2, 2, 2}, SeriesStyle::kLineAndMarkers});
  Panel empty;
  empty.series.push_back({"nothing", {}, {}});
  empty.series.push_back({"mismatched", {1, 2, 3}, {1}});
  Panel nan_only;
  nan_only.series.push_back({"nan", {NAN, 1}, {1, INFINITY}});
  Panel no_series;
  Panel huge;  // values whose range would overflow are skipped like NaN
  huge.series.push_back({"huge", {0, 1, 2}, {1e308, -1e308, 5}, SeriesStyle::kLineAndMarkers});
  const std::vector<Panel> panels = {single, flat, empty, nan_only, no_series, huge};
  PlotOptions options;
  options.panel_width = 300;
  options.height = 250;
  const at::Tensor picture = vit::io::render_plot(panels, options);
  ASSERT_EQ(picture.sizes(), (c10::IntArrayRef{3, 250, 1800}));

  const std::vector<vit::io::Axes> axes = vit::io::plot_layout(panels, options);
  ASSERT_EQ(axes.size(), 6u);
  EXPECT_LT(axes[0].x_min, 3.0);
  EXPECT_GT(axes[0].x_max, 3.0);
  EXPECT_LT(axes[1].y_min, 2.0);  // all-equal y still gets a range around the value
  EXPECT_GT(axes[1].y_max, 2.0);
  EXPECT_EQ(axes[3].x_min, 0.0);  // nothing finite: the unit range
  EXPECT_EQ(axes[3].y_max, 1.0);
  EXPECT_GE(axes[4].left, 4 * 300);  // the fifth panel sits in the fifth slot
  EXPECT_LT(axes[5].y_min, 5.0);
  EXPECT_GT(axes[5].y_max, 5.0);
  EXPECT_LT(axes[5].y_max, 10.0);
  // The single point is drawn in tab10 blue.
  const auto [column, row] = axes[0].to_pixel(3, 7);
  EXPECT_EQ(rgb_at(picture, std::lround(row), std::lround(column)), kTabBlue);

  EXPECT_EQ(vit::io::render_plot({}).sizes(), (c10::IntArrayRef{3, 500, 500}));
}

TEST(PlotTest, CrowdedLegendMovesOutsideAndKeepsEverySeriesColour) {
  Panel panel;
  panel.integer_x = true;
  panel.dodge = 0.5;
  for (int h = 0; h < 16; ++h) {
    Series series{"head " + std::to_string(h + 1), {}, {}, SeriesStyle::kMarkers};
    for (int l = 1; l <= 6; ++l) {
      series.x.push_back(l);
      series.y.push_back(l + 0.3 * h);
    }
    panel.series.push_back(series);
  }
  PlotOptions options;
  options.panel_width = 700;
  options.height = 500;
  const vit::io::Axes axes = vit::io::plot_layout({panel}, options)[0];
  EXPECT_LT(axes.left + axes.width, 700 - 80);  // room for the legend on the right
  const at::Tensor picture = vit::io::render_plot({panel}, options);
  // Head 1 and head 11 share tab10 blue (circle vs square); head 4 is red.
  EXPECT_GT(count_color(picture, kTabBlue), 40);
  EXPECT_GT(count_color(picture, kTabRed), 20);
  // The legend's blue marker lies right of the axes.
  const at::Tensor legend =
      picture.index({torch::indexing::Slice(), torch::indexing::Slice(),
                     torch::indexing::Slice(axes.left + axes.width + 1, 700)});
  EXPECT_GT(count_color(legend, kTabBlue), 10);
}

}  // namespace
