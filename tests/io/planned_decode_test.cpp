#include "vit/io/planned_decode.hpp"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "error_of.hpp"
#include "vit/error.hpp"

namespace {

using vit::io::CropResizePlan;
using vit::io::decode_planned;

// A photograph-like BGR image: smooth gradients, a few shapes and noise.
cv::Mat photograph_bgr(int height, int width, int seed) {
  cv::Mat image(height, width, CV_8UC3);
  cv::RNG rng(seed);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      image.at<cv::Vec3b>(y, x) = cv::Vec3b(uint8_t(255 * x / width), uint8_t(255 * y / height),
                                            uint8_t((x + y + seed) % 256));
  for (int k = 0; k < 6; ++k)
    cv::circle(image, {rng.uniform(0, width), rng.uniform(0, height)},
               rng.uniform(5, std::max(6, height / 3)),
               cv::Scalar(rng.uniform(0, 255), rng.uniform(0, 255), rng.uniform(0, 255)), -1);
  cv::Mat noise(height, width, CV_8UC3);
  rng.fill(noise, cv::RNG::UNIFORM, 0, 12);
  return image + noise;
}

std::vector<uint8_t> encoded(const cv::Mat& image, const char* ext) {
  std::vector<uint8_t> bytes;
  cv::imencode(ext, image, bytes, {cv::IMWRITE_JPEG_QUALITY, 95});
  return bytes;
}

// The reference: the whole image decoded, the box cut, resized with the same
// filters, the window cut; uint8 (3, h, w) RGB.
at::Tensor reference(const std::vector<uint8_t>& bytes, const CropResizePlan& p) {
  cv::Mat bgr = cv::imdecode(bytes, cv::IMREAD_COLOR), rgb, resized;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  const cv::Mat box = rgb(cv::Rect(int(p.left), int(p.top), int(p.width), int(p.height)));
  const bool shrinks = p.out_height <= p.height && p.out_width <= p.width;
  cv::resize(box, resized, cv::Size(int(p.out_width), int(p.out_height)), 0, 0,
             shrinks ? cv::INTER_AREA : cv::INTER_LINEAR);
  cv::Mat window = p.crop_height > 0 ? resized(cv::Rect(int(p.crop_left), int(p.crop_top),
                                                        int(p.crop_width), int(p.crop_height)))
                                           .clone()
                                     : resized;
  return torch::from_blob(window.data, {window.rows, window.cols, 3}, torch::kUInt8)
      .permute({2, 0, 1})
      .clone();
}

CropResizePlan box_plan(int64_t top, int64_t left, int64_t height, int64_t width, int64_t out) {
  CropResizePlan p;
  p.top = top;
  p.left = left;
  p.height = height;
  p.width = width;
  p.out_height = p.out_width = out;
  return p;
}

double mean_abs_difference(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(torch::kFloat32) - b.to(torch::kFloat32)).abs().mean().item<double>();
}

TEST(PlannedDecode, DctScaleIsTheLargestThatKeepsTheBoxAtLeastItsOutput) {
  EXPECT_EQ(vit::io::dct_scale_for(500, 375, 224, 224), 1);
  EXPECT_EQ(vit::io::dct_scale_for(900, 600, 224, 224), 2);
  EXPECT_EQ(vit::io::dct_scale_for(1000, 1000, 224, 224), 4);
  EXPECT_EQ(vit::io::dct_scale_for(1792, 1792, 224, 224), 8);
  EXPECT_EQ(vit::io::dct_scale_for(4000, 3000, 256, 341), 8);
  EXPECT_EQ(vit::io::dct_scale_for(100, 100, 224, 224), 1);  // enlarging
}

TEST(PlannedDecode, APngBoxIsExactlyTheWholeDecodeCutAndResized) {
  const auto bytes = encoded(photograph_bgr(200, 300, 1), ".png");
  const auto plan = box_plan(/*top=*/20, /*left=*/50, /*height=*/150, /*width=*/180, /*out=*/64);
  int64_t seen_h = 0, seen_w = 0;
  const auto image = decode_planned(
      bytes.data(), bytes.size(), 3,
      [&](int64_t h, int64_t w) {
        seen_h = h;
        seen_w = w;
        return plan;
      },
      "a.png");
  EXPECT_EQ(seen_h, 200);
  EXPECT_EQ(seen_w, 300);
  EXPECT_EQ(image.sizes(), (std::vector<int64_t>{3, 64, 64}));
  EXPECT_TRUE(torch::equal(image, reference(bytes, plan)));
}

TEST(PlannedDecode, AJpegDecodedAtAQuarterStaysCloseToTheFullDecode) {
  const auto bytes = encoded(photograph_bgr(1200, 1000, 2), ".jpg");
  const auto plan = box_plan(100, 60, 960, 920, 224);  // 960 / 4 = 240 >= 224: scale 1/4
  ASSERT_EQ(vit::io::dct_scale_for(960, 920, 224, 224), 4);
  const auto image = decode_planned(
      bytes.data(), bytes.size(), 3, [&](int64_t, int64_t) { return plan; }, "a.jpg");
  EXPECT_EQ(image.sizes(), (std::vector<int64_t>{3, 224, 224}));
  // libjpeg's scaled IDCT is a different low-pass than area averaging, and
  // the box snaps to the quarter-size grid: close, not equal.
  const double difference = mean_abs_difference(image, reference(bytes, plan));
  EXPECT_LT(difference, 4.0);
  EXPECT_GT(difference, 0.0);
}

// A crop at full scale, libjpeg decoding only its rows and iMCU columns,
// against the whole image decoded by OpenCV and cut: the same IDCT, so the
// same pixels but where chroma upsampling meets the region's edge.
TEST(PlannedDecode, APartialJpegDecodeIsTheWholeDecodeCut) {
  const auto bytes = encoded(photograph_bgr(300, 400, 6), ".jpg");
  const auto plan = box_plan(/*top=*/37, /*left=*/101, /*height=*/150, /*width=*/150, /*out=*/150);
  const auto image = decode_planned(
      bytes.data(), bytes.size(), 3, [&](int64_t, int64_t) { return plan; }, "p.jpg");
  const auto expected = reference(bytes, plan);
  const auto difference = (image.to(torch::kInt32) - expected.to(torch::kInt32)).abs();
  EXPECT_LE(difference.max().item<int>(), 2);
  EXPECT_LT(difference.to(torch::kFloat32).mean().item<float>(), 0.05f);
}

TEST(PlannedDecode, ATruncatedJpegIsAnErrorNotAGrayFill) {
  const auto bytes = encoded(photograph_bgr(120, 160, 7), ".jpg");
  const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + bytes.size() * 2 / 3);
  EXPECT_EQ(vit::testing::error_of([&] {
              decode_planned(
                  cut.data(), cut.size(), 3,
                  [&](int64_t, int64_t) { return box_plan(0, 0, 120, 160, 32); }, "cut.jpg");
            }),
            "cut.jpg: cannot decode the JPEG (Premature end of JPEG file)");
}

// A header may claim any size: a few bytes must not make the decoder
// allocate gigabytes.
TEST(PlannedDecode, AJpegClaimingAHugeSizeIsRefusedBeforeDecoding) {
  auto bytes = encoded(photograph_bgr(16, 16, 8), ".jpg");
  for (size_t i = 2; i + 8 < bytes.size(); ++i)
    if (bytes[i] == 0xff && bytes[i + 1] == 0xc0) {  // the frame header: height, width
      bytes[i + 5] = bytes[i + 7] = 0xff;
      bytes[i + 6] = bytes[i + 8] = 0xf0;
      break;
    }
  EXPECT_EQ(vit::testing::error_of([&] {
              decode_planned(
                  bytes.data(), bytes.size(), 3,
                  [&](int64_t h, int64_t w) { return box_plan(0, 0, h, w, 224); }, "huge.jpg");
            }),
            "huge.jpg: a 65520x65520 image, expected at most 268435456 pixels");
}

// A progressive JPEG makes libjpeg hold the whole image's coefficients,
// even for a crop: a small file claiming 16383 x 16383 in 4:4:4 would take
// 1.5 GB, and is refused before libjpeg starts.
TEST(PlannedDecode, AProgressiveJpegThatNeedsTooMuchMemoryIsRefusedBeforeDecoding) {
  std::vector<uint8_t> bytes;
  cv::imencode(".jpg", photograph_bgr(64, 64, 2), bytes, {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  for (size_t i = 2; i + 20 < bytes.size(); ++i)
    if (bytes[i] == 0xff && bytes[i + 1] == 0xc2) {  // the progressive frame header
      bytes[i + 5] = bytes[i + 7] = 0x3f;
      bytes[i + 6] = bytes[i + 8] = 0xff;
      for (size_t c = 0; c < 3; ++c)
        bytes[i + 11 + 3 * c] = 0x11;  // every component at full resolution
      break;
    }
  EXPECT_EQ(vit::testing::error_of([&] {
              decode_planned(
                  bytes.data(), bytes.size(), 3,
                  [&](int64_t h, int64_t w) { return box_plan(0, 0, h, w, 224); }, "deep.jpg");
            }),
            "deep.jpg: a 16383x16383 progressive (or multi-scan) JPEG needs 1536 MB to decode, "
            "expected at most 1024 MB");
}

// One huge photograph does not stay pinned to the thread that decoded it:
// after a 2^26-pixel JPEG decoded at full scale (8192 rows of 8192 gray
// bytes, 64 MiB), the next ordinary decode lets those rows go, and the
// thread keeps at most 16 MiB.
TEST(PlannedDecode, AHugeJpegsRowsAreLetGoAtTheNextDecode) {
  cv::Mat huge(8192, 8192, CV_8UC1);
  cv::randu(huge, 0, 32);
  huge += cv::Scalar(100);
  const auto big = encoded(huge, ".jpg");
  const auto whole = [](int64_t out) {
    return [out](int64_t h, int64_t w) { return box_plan(0, 0, h, w, out); };
  };
  const auto image = decode_planned(big.data(), big.size(), 1, whole(4097), "huge.jpg");
  ASSERT_EQ(image.sizes(), (std::vector<int64_t>{1, 4097, 4097}));
  EXPECT_GE(vit::io::kept_decode_bytes(), size_t{64} << 20);
  const auto small = encoded(photograph_bgr(120, 160, 1), ".jpg");
  decode_planned(small.data(), small.size(), 3, whole(64), "small.jpg");
  EXPECT_LE(vit::io::kept_decode_bytes(), size_t{16} << 20);
  EXPECT_GT(vit::io::kept_decode_bytes(), 0u);
}

TEST(PlannedDecode, TheWindowOfAnEvaluationPlanIsCut) {
  const auto bytes = encoded(photograph_bgr(120, 160, 3), ".png");
  CropResizePlan p;
  p.height = 120;
  p.width = 160;
  p.out_height = 96;
  p.out_width = 128;
  p.crop_top = 16;
  p.crop_left = 32;
  p.crop_height = p.crop_width = 64;
  const auto image = decode_planned(
      bytes.data(), bytes.size(), 3, [&](int64_t, int64_t) { return p; }, "e.png");
  EXPECT_EQ(image.sizes(), (std::vector<int64_t>{3, 64, 64}));
  EXPECT_TRUE(torch::equal(image, reference(bytes, p)));
}

TEST(PlannedDecode, GrayIsTheLumaOfTheColourDecode) {
  const auto bytes = encoded(photograph_bgr(40, 40, 4), ".png");
  const auto plan = box_plan(0, 0, 40, 40, 40);
  const auto rgb = decode_planned(
      bytes.data(), bytes.size(), 3, [&](int64_t, int64_t) { return plan; }, "g");
  const auto gray = decode_planned(
      bytes.data(), bytes.size(), 1, [&](int64_t, int64_t) { return plan; }, "g");
  ASSERT_EQ(gray.sizes(), (std::vector<int64_t>{1, 40, 40}));
  const auto luma =
      (rgb.to(torch::kFloat32) * torch::tensor({0.299f, 0.587f, 0.114f}).view({3, 1, 1})).sum(0);
  EXPECT_LE((gray[0].to(torch::kFloat32) - luma).abs().max().item<float>(), 1.0f);
}

TEST(PlannedDecode, BadPlansAndBytesAreOneLineErrors) {
  const auto bytes = encoded(photograph_bgr(50, 60, 5), ".png");
  const auto decode = [&](CropResizePlan p) {
    return vit::testing::error_of([&] {
      decode_planned(
          bytes.data(), bytes.size(), 3, [&](int64_t, int64_t) { return p; }, "x.png");
    });
  };
  EXPECT_EQ(decode(box_plan(10, 10, 50, 20, 8)),
            "x.png: the crop 50x20 at (10, 10) is not inside the 50x60 image");
  EXPECT_EQ(decode(box_plan(0, 0, 10, 10, 0)),
            "x.png: cannot resize a crop to 0x0, expected 1..16384 pixels a side");
  auto window = box_plan(0, 0, 10, 10, 8);
  window.crop_height = window.crop_width = 9;
  EXPECT_EQ(decode(window), "x.png: the window 9x9 at (0, 0) is not inside the resized 8x8 crop");
  const std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + 40);
  EXPECT_TRUE(vit::testing::throws_error_containing(
      [&] {
        decode_planned(
            truncated.data(), truncated.size(), 3,
            [&](int64_t, int64_t) { return box_plan(0, 0, 1, 1, 1); }, "cut.png");
      },
      "cut.png: cannot decode"));
  EXPECT_EQ(vit::testing::error_of([&] {
              decode_planned(
                  bytes.data(), bytes.size(), 2,
                  [&](int64_t, int64_t) { return box_plan(0, 0, 1, 1, 1); }, "x.png");
            }),
            "x.png: asked for 2 channels, expected 1 (gray) or 3 (RGB)");
}

}  // namespace
