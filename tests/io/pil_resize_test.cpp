// The private Pillow resampler of src/io. That it equals Pillow to the bit is
// PyCheck's (check_crops.py, check_timm_families.py); these pin its arithmetic.
#include "../../src/io/pil_resize.hpp"

#include <vector>

#include <gtest/gtest.h>

#include "vit/error.hpp"

namespace {

using vit::io::detail::pil_resize;
using vit::io::detail::PilFilter;

std::vector<int> row_of(const cv::Mat& mat) {
  std::vector<int> values;
  for (int x = 0; x < mat.cols * mat.channels(); ++x)
    values.push_back(mat.ptr<uint8_t>(0)[x]);
  return values;
}

// Halving 10 20 30 40 with the triangle filter widened to 2 pixels: the first
// output's centre is at 1.0 in input pixels, so its taps at 0.5, 1.5 and 2.5
// weigh 0.75, 0.75 and 0.25, normalised to 3/7, 3/7, 1/7: (30 + 60 + 30) / 7
// = 17.1 rounds to 17. The second's, at 1.5, 2.5, 3.5: (20 + 90 + 120) / 7 =
// 32.9, to 33.
TEST(PilResize, BilinearShrinkingWidensTheTriangleFilter) {
  const cv::Mat row = (cv::Mat_<uint8_t>(1, 4) << 10, 20, 30, 40);
  EXPECT_EQ(row_of(pil_resize(row, 1, 2, PilFilter::kBilinear)), (std::vector<int>{17, 33}));
}

// Doubling 0 90 with Keys' cubic (a = -0.5), support 2. Output 1's centre is
// 0.75 in input pixels: the taps at 0.5 and 1.5 sit 0.25 and 0.75 away and
// weigh 0.8672 and 0.2266, so 90 x 0.2266 / 1.0938 = 18.6, to 19. Output 0's,
// at 0.25, sit 0.25 and 1.25 away: 0.8672 and -0.0703, a negative lobe that
// gives -7.9, clipped to 0. Outputs 2 and 3 mirror them: 71.4 and 97.9.
// (Pillow gives 0 19 71 98.)
TEST(PilResize, BicubicEnlargingInterpolatesWithNegativeLobes) {
  const cv::Mat row = (cv::Mat_<uint8_t>(1, 2) << 0, 90);
  EXPECT_EQ(row_of(pil_resize(row, 1, 4, PilFilter::kBicubic)), (std::vector<int>{0, 19, 71, 98}));
}

// An edge, 4 pixels to 16: Pillow gives 0 x 6, 21 88 167 234, 255 x 6; the
// cubic's ring below 0 and above 255 is clipped to the byte.
TEST(PilResize, BicubicRingingAtAnEdgeIsClippedToTheByte) {
  const cv::Mat step = (cv::Mat_<uint8_t>(1, 4) << 0, 0, 255, 255);
  EXPECT_EQ(row_of(pil_resize(step, 1, 16, PilFilter::kBicubic)),
            (std::vector<int>{0, 0, 0, 0, 0, 0, 21, 88, 167, 234, 255, 255, 255, 255, 255, 255}));
}

// The weights of each output pixel sum to 1 within the 22-bit rounding, so a
// flat image stays flat, whichever pass runs first (5 x 23: the height shrinks
// by 32 pixels, the width by none: vertical first).
TEST(PilResize, AFlatImageStaysFlatThroughEitherPassOrder) {
  const cv::Mat flat(37, 23, CV_8UC3, cv::Scalar(200, 7, 129));
  for (const auto filter : {PilFilter::kBilinear, PilFilter::kBicubic})
    for (const auto& [h, w] : {std::pair{11, 19}, {90, 5}, {4, 60}, {37, 9}, {5, 23}, {5, 20}}) {
      const cv::Mat out = pil_resize(flat, h, w, filter);
      ASSERT_EQ(out.size(), cv::Size(w, h));
      std::vector<cv::Mat> planes;
      cv::split(out, planes);
      EXPECT_EQ(cv::countNonZero(planes[0] != 200), 0) << h << "x" << w;
      EXPECT_EQ(cv::countNonZero(planes[1] != 7), 0) << h << "x" << w;
      EXPECT_EQ(cv::countNonZero(planes[2] != 129), 0) << h << "x" << w;
    }
}

TEST(PilResize, TheSameSizeIsACopyAndBadInputIsAnError) {
  const cv::Mat image = (cv::Mat_<uint8_t>(2, 2) << 1, 2, 3, 4);
  const cv::Mat same = pil_resize(image, 2, 2, PilFilter::kBicubic);
  EXPECT_EQ(cv::countNonZero(same != image), 0);
  EXPECT_NE(same.data, image.data);
  EXPECT_THROW(pil_resize(image, 0, 2, PilFilter::kBilinear), vit::Error);
  EXPECT_THROW(pil_resize(cv::Mat(2, 2, CV_16UC1), 1, 1, PilFilter::kBilinear), vit::Error);
}

}  // namespace
