// The private header-size reader of src/io, and decode_image's refusal of
// a header that claims more pixels than it may decode.
#include "../../src/io/image_size.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

#include "error_of.hpp"
#include "vit/io/image_io.hpp"

namespace {

using vit::io::detail::read_image_size;

std::vector<uint8_t> encoded(const std::string& ext, int height, int width, int type = CV_8UC3) {
  std::vector<uint8_t> bytes;
  cv::imencode(ext, cv::Mat(height, width, type, cv::Scalar::all(90)), bytes);
  return bytes;
}

// The formats OpenCV writes here: a minimal OpenCV (the GPU machine's kit)
// has PNG, JPEG and BMP only.
std::vector<std::string> writable_formats() {
  std::vector<std::string> formats;
  for (const std::string ext : {".jpg", ".png", ".bmp", ".webp", ".tiff", ".ppm", ".pgm", ".pbm"})
    if (cv::haveImageWriter("probe" + ext)) formats.push_back(ext);
  return formats;
}

TEST(ImageSize, ReadsTheSizeOfEveryFormatOpenCvWrites) {
  const auto formats = writable_formats();
  ASSERT_GE(formats.size(), 3u);
  for (const std::string& ext : formats) {
    const int type = ext == ".pgm" || ext == ".pbm" ? CV_8UC1 : CV_8UC3;
    const auto bytes = encoded(ext, 37, 53, type);
    const auto size = read_image_size(bytes.data(), bytes.size());
    ASSERT_TRUE(size) << ext;
    EXPECT_EQ(size->width, 53) << ext;
    EXPECT_EQ(size->height, 37) << ext;
  }
}

TEST(ImageSize, ReadsTheLosslessWebPAndTheCommentedPnmHeaders) {
  if (cv::haveImageWriter("probe.webp")) {
    std::vector<uint8_t> lossless;
    cv::imencode(".webp", cv::Mat(21, 300, CV_8UC3, cv::Scalar::all(5)), lossless,
                 {cv::IMWRITE_WEBP_QUALITY, 101});  // above 100: VP8L
    ASSERT_EQ(std::string(lossless.begin() + 12, lossless.begin() + 16), "VP8L");
    const auto size = read_image_size(lossless.data(), lossless.size());
    ASSERT_TRUE(size);
    EXPECT_EQ(size->width, 300);
    EXPECT_EQ(size->height, 21);
  }
  const std::string pnm = "P5\n# made by hand\n  640 # the width\n480\n255\n";
  const auto size = read_image_size(reinterpret_cast<const uint8_t*>(pnm.data()), pnm.size());
  ASSERT_TRUE(size);
  EXPECT_EQ(size->width, 640);
  EXPECT_EQ(size->height, 480);
}

TEST(ImageSize, EveryCutHeaderEndsCleanly) {
  for (const std::string& ext : writable_formats()) {
    const int type = ext == ".pgm" || ext == ".pbm" ? CV_8UC1 : CV_8UC3;
    const auto bytes = encoded(ext, 9, 11, type);
    size_t first = 0;  // the shortest prefix that holds the size
    while (first <= bytes.size() && !read_image_size(bytes.data(), first))
      ++first;
    EXPECT_LT(first, bytes.size()) << ext;
    EXPECT_GE(first, 8u) << ext;  // "P6\n11 9\n": 8 bytes
  }
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_FALSE(read_image_size(text.data(), text.size()));
  EXPECT_FALSE(read_image_size(text.data(), 0));
}

// libjpeg skips stray bytes before a marker, so the header reader must too:
// a fuzzing finding was a JPEG with one stray byte before its frame header,
// claiming 10439 x 63488, which the reader missed and OpenCV decoded into a
// 2 GB allocation.
TEST(ImageSize, AJpegReadsThroughStrayBytesBeforeAMarkerAsLibjpegDoes) {
  auto bytes = encoded(".jpg", 30, 40);
  size_t frame = 0;
  for (size_t i = 2; i + 1 < bytes.size() && frame == 0; ++i)
    if (bytes[i] == 0xff && bytes[i + 1] == 0xc0) frame = i;
  ASSERT_GT(frame, 0u);
  bytes.insert(bytes.begin() + long(frame), {0x0a, 0x00, 0x0a});
  const auto size = read_image_size(bytes.data(), bytes.size());
  ASSERT_TRUE(size);
  EXPECT_EQ(size->width, 40);
  EXPECT_EQ(size->height, 30);
  const at::Tensor decoded = vit::io::decode_image(bytes, 3, 0, "stray.jpg");
  EXPECT_EQ(decoded.sizes(), (std::vector<int64_t>{3, 30, 40}));
}

// Each format with its header edited to claim 30000 x 20000 pixels: refused
// with one line before OpenCV allocates, whatever the codec.
TEST(ImageSize, AHeaderClaimingTooManyPixelsIsRefusedBeforeDecoding) {
  const auto put_be = [](std::vector<uint8_t>& b, size_t at, uint32_t v, int n) {
    for (int i = 0; i < n; ++i)
      b[at + i] = uint8_t(v >> (8 * (n - 1 - i)));
  };
  const auto put_le = [](std::vector<uint8_t>& b, size_t at, uint32_t v, int n) {
    for (int i = 0; i < n; ++i)
      b[at + i] = uint8_t(v >> (8 * i));
  };
  std::vector<std::pair<std::string, std::vector<uint8_t>>> claims;
  auto png = encoded(".png", 4, 4);
  put_be(png, 16, 30000, 4);
  put_be(png, 20, 20000, 4);
  claims.emplace_back("huge.png", png);
  auto bmp = encoded(".bmp", 4, 4);
  put_le(bmp, 18, 30000, 4);
  put_le(bmp, 22, uint32_t(-20000), 4);  // top-down rows
  claims.emplace_back("huge.bmp", bmp);
  std::string pnm = "P6\n30000 20000\n255\n";
  claims.emplace_back("huge.ppm", std::vector<uint8_t>(pnm.begin(), pnm.end()));
  auto jpeg = encoded(".jpg", 4, 4);
  for (size_t i = 2; i + 8 < jpeg.size(); ++i)
    if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc0) {
      put_be(jpeg, i + 5, 20000, 2);
      put_be(jpeg, i + 7, 30000, 2);
      break;
    }
  claims.emplace_back("huge.jpg", jpeg);
  for (const auto& [name, bytes] : claims)
    EXPECT_EQ(vit::testing::error_of([&] { vit::io::decode_image(bytes, 3, 32, name); }),
              name + ": a 30000x20000 image, expected at most 268435456 pixels");
  // The largest claim a PNG can make: its product overflows int64 (a fuzzing finding).
  auto widest = encoded(".png", 4, 4);
  put_be(widest, 16, 0xffffffff, 4);
  put_be(widest, 20, 0xffffffff, 4);
  EXPECT_EQ(vit::testing::error_of([&] { vit::io::decode_image(widest, 3, 32, "widest.png"); }),
            "widest.png: a 4294967295x4294967295 image, expected at most 268435456 pixels");
  // A progressive JPEG of 545 bytes claiming 16383 x 16383 in 4:4:4: under
  // the pixel cap, but libjpeg would hold 1.5 GB of coefficients.
  std::vector<uint8_t> progressive;
  cv::imencode(".jpg", cv::Mat(64, 64, CV_8UC3, cv::Scalar::all(9)), progressive,
               {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  for (size_t i = 2; i + 20 < progressive.size(); ++i)
    if (progressive[i] == 0xff && progressive[i + 1] == 0xc2) {
      put_be(progressive, i + 5, 16383, 2);
      put_be(progressive, i + 7, 16383, 2);
      for (size_t c = 0; c < 3; ++c)
        progressive[i + 11 + 3 * c] = 0x11;  // every component at full resolution
      break;
    }
  EXPECT_EQ(
      vit::testing::error_of([&] { vit::io::decode_image(progressive, 3, 32, "deep.jpg"); }),
      "deep.jpg: a 16383x16383 progressive (or multi-scan) JPEG needs 1536 MB to decode, expected "
      "at most 1024 MB");
  auto cut = encoded(".png", 4, 4);
  cut.resize(14);
  EXPECT_EQ(vit::testing::error_of([&] { vit::io::decode_image(cut, 3, 32, "cut.png"); }),
            "cut.png: cannot decode the image (its header holds no size: damaged or cut short)");
}

}  // namespace
