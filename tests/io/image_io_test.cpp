#include "vit/io/image_io.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <opencv2/imgcodecs.hpp>
#include "picture_checks.hpp"

#include "vit/error.hpp"

namespace fs = std::filesystem;

namespace {

using vit::io::testing::expect_error;

class ImageIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vit_image_io_test_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a BGR(A) or gray Mat the way any other program would.
  fs::path write_fixture(const std::string& name, const cv::Mat& mat) {
    const fs::path path = dir_ / name;
    EXPECT_TRUE(cv::imwrite(path.string(), mat));
    return path;
  }

  fs::path dir_;
};

TEST_F(ImageIoTest, ReadsRgbAndGrayExactly) {
  // Row 0: pure red, green, blue; row 1: black, white, (10, 20, 30) RGB.
  cv::Mat bgr(2, 3, CV_8UC3);
  bgr.at<cv::Vec3b>(0, 0) = {0, 0, 255};
  bgr.at<cv::Vec3b>(0, 1) = {0, 255, 0};
  bgr.at<cv::Vec3b>(0, 2) = {255, 0, 0};
  bgr.at<cv::Vec3b>(1, 0) = {0, 0, 0};
  bgr.at<cv::Vec3b>(1, 1) = {255, 255, 255};
  bgr.at<cv::Vec3b>(1, 2) = {30, 20, 10};
  const fs::path path = write_fixture("rgb.png", bgr);

  const at::Tensor rgb = vit::io::read_image(path, /*channels=*/3, /*side=*/0);
  ASSERT_EQ(rgb.sizes(), (c10::IntArrayRef{3, 2, 3}));
  EXPECT_EQ(rgb.scalar_type(), torch::kUInt8);
  const auto expected = torch::tensor({255, 0, 0, 0, 255, 10,   // R
                                       0, 255, 0, 0, 255, 20,   // G
                                       0, 0, 255, 0, 255, 30},  // B
                                      torch::kUInt8)
                            .view({3, 2, 3});
  EXPECT_TRUE(torch::equal(rgb, expected)) << rgb;

  // Luma 0.299 R + 0.587 G + 0.114 B: 76.2, 149.7, 29.1, 0, 255, 18.1.
  const at::Tensor gray = vit::io::read_image(path, /*channels=*/1, /*side=*/0);
  const auto expected_gray =
      torch::tensor({76, 150, 29, 0, 255, 18}, torch::kUInt8).view({1, 2, 3});
  EXPECT_TRUE(torch::equal(gray, expected_gray)) << gray;
}

TEST_F(ImageIoTest, DropsAlphaAndReplicatesGray) {
  cv::Mat bgra(1, 2, CV_8UC4);
  bgra.at<cv::Vec4b>(0, 0) = {1, 2, 3, 0};  // fully transparent: colour kept, alpha dropped
  bgra.at<cv::Vec4b>(0, 1) = {40, 50, 60, 255};
  const at::Tensor rgb = vit::io::read_image(write_fixture("rgba.png", bgra), 3, 0);
  EXPECT_TRUE(
      torch::equal(rgb, torch::tensor({3, 60, 2, 50, 1, 40}, torch::kUInt8).view({3, 1, 2})))
      << rgb;

  cv::Mat gray(1, 2, CV_8UC1);
  gray.at<uint8_t>(0, 0) = 7;
  gray.at<uint8_t>(0, 1) = 200;
  const at::Tensor replicated = vit::io::read_image(write_fixture("gray.png", gray), 3, 0);
  EXPECT_TRUE(torch::equal(replicated,
                           torch::tensor({7, 200, 7, 200, 7, 200}, torch::kUInt8).view({3, 1, 2})))
      << replicated;
}

TEST_F(ImageIoTest, ScalesSixteenBitToEightBit) {
  cv::Mat deep(1, 3, CV_16UC1);
  deep.at<uint16_t>(0, 0) = 0;
  deep.at<uint16_t>(0, 1) = 128 * 257;  // 257 = 65535 / 255
  deep.at<uint16_t>(0, 2) = 65535;
  const at::Tensor image = vit::io::read_image(write_fixture("deep.png", deep), 1, 0);
  EXPECT_TRUE(torch::equal(image, torch::tensor({0, 128, 255}, torch::kUInt8).view({1, 1, 3})))
      << image;
}

TEST_F(ImageIoTest, ResizesOnlyWhenNeeded) {
  cv::Mat gray(4, 4, CV_8UC1);
  for (int i = 0; i < 16; ++i)
    gray.at<uint8_t>(i / 4, i % 4) = static_cast<uint8_t>(i * 16);
  const fs::path path = write_fixture("ramp.png", gray);

  const at::Tensor same = vit::io::read_image(path, 1, /*side=*/4);
  EXPECT_TRUE(torch::equal(same, vit::io::read_image(path, 1, /*side=*/0)));
  EXPECT_EQ(same[0][3][3].item<int>(), 240);

  // Shrinking averages 2x2 blocks: (0 + 16 + 64 + 80) / 4 = 40, and so on.
  const at::Tensor shrunk = vit::io::read_image(path, 1, /*side=*/2);
  EXPECT_TRUE(
      torch::equal(shrunk, torch::tensor({40, 72, 168, 200}, torch::kUInt8).view({1, 2, 2})))
      << shrunk;

  // Enlarging [0, 100] bilinearly with pixel centres at (x + 0.5) / 2 - 0.5:
  // -0.25 -> 0, 0.25 -> 25, 0.75 -> 75, 1.25 -> 100.
  const at::Tensor row = torch::tensor({0, 100, 0, 100}, torch::kUInt8).view({1, 2, 2});
  const at::Tensor grown = vit::io::resize_image(row, /*side=*/4);
  EXPECT_TRUE(torch::equal(grown[0][2], torch::tensor({0, 25, 75, 100}, torch::kUInt8))) << grown;
}

TEST_F(ImageIoTest, StretchesNonSquareImages) {
  cv::Mat wide(2, 4, CV_8UC1, cv::Scalar(0));
  wide.colRange(2, 4).setTo(200);
  const at::Tensor image = vit::io::read_image(write_fixture("wide.png", wide), 1, /*side=*/2);
  EXPECT_TRUE(torch::equal(image, torch::tensor({0, 200, 0, 200}, torch::kUInt8).view({1, 2, 2})))
      << image;
}

TEST_F(ImageIoTest, DecodesFromMemory) {
  cv::Mat bgr(1, 1, CV_8UC3, cv::Scalar(10, 20, 30));
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(cv::imencode(".bmp", bgr, bytes));
  const at::Tensor image = vit::io::decode_image(bytes, 3, /*side=*/2, "memory.bmp");
  EXPECT_TRUE(torch::equal(
      image, torch::tensor({30, 30, 30, 30, 20, 20, 20, 20, 10, 10, 10, 10}, torch::kUInt8)
                 .view({3, 2, 2})))
      << image;
  expect_error([&] { vit::io::decode_image(bytes.data(), 0, 3, 2, "memory.bmp"); },
               "memory.bmp: empty file");
}

TEST_F(ImageIoTest, RefusesFormatsOutsideTheSupportedOnesBeforeDecoding) {
  // A DICOM preamble: 128 bytes, then "DICM". OpenCV would hand it to GDCM,
  // which aborts on some damaged files (a fuzzing finding).
  std::vector<uint8_t> dicom(128, 0);
  for (const char c : std::string("DICM\x02\x00\x00\x00"))
    dicom.push_back(static_cast<uint8_t>(c));
  expect_error([&] { vit::io::decode_image(dicom, 3, 2, "scan.dcm"); },
               "scan.dcm: not a PNG, JPEG, BMP, WebP, TIFF or PNM (PBM/PGM/PPM) image");
  // A damaged WebP header with the same marker (the fuzzing finding): OpenCV's
  // WebP check refuses the header and would fall through to GDCM.
  std::vector<uint8_t> webp = {'R', 'I', 'F', 'F', 0x22, 0, 0, 0, 'W', 'E', 'B', 'P'};
  webp.resize(128, 0xff);
  for (const char c : std::string("DICM"))
    webp.push_back(static_cast<uint8_t>(c));
  expect_error([&] { vit::io::decode_image(webp, 3, 2, "damaged.webp"); },
               "damaged.webp: not a PNG");
  // RIFF without WEBP at offset 8 is not WebP.
  const std::vector<uint8_t> riff = {'R', 'I', 'F', 'F', 4, 0, 0, 0, 'A', 'V', 'I', ' '};
  expect_error([&] { vit::io::decode_image(riff, 3, 2, "clip.avi"); }, "clip.avi: not a PNG");
  // Each supported format still decodes, to the same pixels where lossless.
  // A minimal OpenCV (the GPU machine's kit: PNG, JPEG and BMP) skips the
  // codecs it was built without.
  cv::Mat gray(2, 2, CV_8UC1, cv::Scalar(77));
  for (const std::string ext : {".png", ".bmp", ".tiff", ".pgm", ".webp", ".jpg"}) {
    const bool optional = ext == ".tiff" || ext == ".pgm" || ext == ".webp";
    if (optional && !cv::haveImageWriter("probe" + ext)) continue;
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(cv::imencode(ext, gray, bytes)) << ext;
    const at::Tensor image = vit::io::decode_image(bytes, 1, 0, "gray" + ext);
    EXPECT_EQ(image.sizes(), (std::vector<int64_t>{1, 2, 2})) << ext;
    EXPECT_NEAR(image.to(torch::kFloat).mean().item<float>(), 77.0f, 2.0f) << ext;
  }
}

TEST_F(ImageIoTest, DecodesFromManyThreadsAtOnce) {
  cv::Mat bgr(40, 30, CV_8UC3);
  cv::randu(bgr, cv::Scalar::all(0), cv::Scalar::all(256));
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(cv::imencode(".png", bgr, bytes));
  const at::Tensor expected = vit::io::decode_image(bytes, 3, 32, "random.png");
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        mismatches[t] += !torch::equal(vit::io::decode_image(bytes, 3, 32, "random.png"), expected);
      }
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  EXPECT_EQ(mismatches, (std::vector<int>{0, 0, 0, 0}));
}

TEST_F(ImageIoTest, RejectsMissingCorruptAndBadRequests) {
  const fs::path missing = dir_ / "missing.png";
  expect_error([&] { vit::io::read_image(missing, 3, 32); }, missing.string() + ": no such file");

  const fs::path corrupt = dir_ / "corrupt.png";
  std::ofstream(corrupt, std::ios::binary) << "\x89PNG\r\n\x1a\n this is not really a PNG";
  expect_error([&] { vit::io::read_image(corrupt, 3, 32); }, corrupt.string() + ": cannot decode");

  const fs::path empty = dir_ / "empty.jpg";
  std::ofstream(empty, std::ios::binary).flush();
  expect_error([&] { vit::io::read_image(empty, 3, 32); }, empty.string() + ": empty file");

  expect_error([&] { vit::io::read_image(dir_, 3, 32); }, "is a folder");
  expect_error([&] { vit::io::read_image(corrupt, 3, 100000); },
               "asked for side 100000, expected at most 16384");
  expect_error([&] { vit::io::read_image(corrupt, 2, 32); },
               "asked for 2 channels, expected 1 (gray) or 3 (RGB)");
}

TEST_F(ImageIoTest, WritesPngThatReadsBackExactly) {
  const at::Tensor rgb =
      torch::arange(3 * 5 * 7, torch::kInt).remainder(256).to(torch::kUInt8).view({3, 5, 7});
  const fs::path path = dir_ / "a" / "b" / "rgb.png";
  vit::io::write_png(path, rgb);
  EXPECT_TRUE(torch::equal(vit::io::read_image(path, 3, 0), rgb));
  // The file is a real RGB PNG: OpenCV sees BGR, so blue (channel 2) comes first.
  const cv::Mat mat = cv::imread(path.string(), cv::IMREAD_UNCHANGED);
  EXPECT_EQ(mat.at<cv::Vec3b>(0, 0)[0], rgb[2][0][0].item<uint8_t>());

  const at::Tensor gray = rgb.slice(0, 0, 1).contiguous();
  vit::io::write_png(dir_ / "gray.png", gray);
  EXPECT_TRUE(torch::equal(vit::io::read_image(dir_ / "gray.png", 1, 0), gray));
}

TEST_F(ImageIoTest, WriteFailuresNameThePath) {
  const fs::path file = dir_ / "plain_file";
  std::ofstream(file) << "x";
  // A folder that cannot exist because a file holds its name (fails even as root).
  const fs::path below_file = file / "out.png";
  expect_error(
      [&] {
        vit::io::write_png(below_file, torch::zeros({3, 2, 2}, torch::kUInt8));
      },
      below_file.string() + ": cannot create folder");
  // The path is a folder, so the file cannot be opened.
  expect_error(
      [&] {
        vit::io::write_png(dir_, torch::zeros({1, 2, 2}, torch::kUInt8));
      },
      dir_.string() + ": cannot open for writing");
  if (fs::exists("/dev/full")) {
    expect_error(
        [&] {
          vit::io::write_png("/dev/full", torch::zeros({1, 8, 8}, torch::kUInt8));
        },
        "/dev/full: write failed");
  }
  expect_error(
      [&] {
        vit::io::write_png(dir_ / "x.png", torch::zeros({2, 2, 2}, torch::kUInt8));
      },
      "expected uint8 (C, H, W) with C = 1 or 3");
}

TEST_F(ImageIoTest, ResizesBatchesLikeSingleImages) {
  const at::Tensor batch = torch::arange(2 * 3 * 6 * 6, torch::kInt)
                               .mul(7)
                               .remainder(256)
                               .to(torch::kUInt8)
                               .view({2, 3, 6, 6});
  const at::Tensor resized = vit::io::resize_batch(batch, /*side=*/4);
  ASSERT_EQ(resized.sizes(), (c10::IntArrayRef{2, 3, 4, 4}));
  EXPECT_TRUE(torch::equal(resized[1], vit::io::resize_image(batch[1], 4)));
  // Already the right size: the very same tensor comes back.
  EXPECT_TRUE(vit::io::resize_batch(batch, 6).is_same(batch));
  expect_error([&] { vit::io::resize_batch(batch.to(torch::kFloat), 4); },
               "expected uint8 (B, C, H, W)");
}

TEST_F(ImageIoTest, ConvertsFloatsAndUndoesNormalisation) {
  const at::Tensor values = torch::tensor({0.0f, 0.5f, 1.0f, -1.0f, 2.0f, NAN, 0.2f});
  EXPECT_TRUE(torch::equal(vit::io::to_uint8(values),
                           torch::tensor({0, 128, 255, 0, 255, 0, 51}, torch::kUInt8)));

  // (x * std + mean) per channel, clamped: channel 0 uses mean 0.5 std 0.25.
  const at::Tensor normalised = torch::tensor({0.0f, 2.0f, -4.0f, 1.0f}).view({2, 1, 2});
  const at::Tensor restored = vit::io::unnormalize(normalised, {0.5, 0.1}, {0.25, 0.5});
  EXPECT_TRUE(torch::allclose(restored, torch::tensor({0.5f, 1.0f, 0.0f, 0.6f}).view({2, 1, 2})))
      << restored;
  expect_error(
      [&] {
        vit::io::unnormalize(normalised, {0.5, 0.1, 0.2}, {0.25});
      },
      "unnormalize: mean has 3 values, expected 1 or 2 (one per channel)");
}

}  // namespace
