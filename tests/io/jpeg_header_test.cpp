#include "vit/io/jpeg_header.hpp"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <opencv2/imgcodecs.hpp>

namespace {

using vit::io::read_jpeg_header;

std::vector<uint8_t> jpeg_of(int height, int width) {
  cv::Mat image(height, width, CV_8UC3, cv::Scalar(10, 120, 230));
  std::vector<uint8_t> bytes;
  cv::imencode(".jpg", image, bytes);
  return bytes;
}

// `jpeg` with an APP1 segment right after SOI holding EXIF's orientation tag,
// in big- or little-endian TIFF order.
std::vector<uint8_t> with_orientation(const std::vector<uint8_t>& jpeg, uint16_t orientation,
                                      bool big_endian) {
  const auto u16 = [&](uint16_t v) {
    return big_endian ? std::vector<uint8_t>{uint8_t(v >> 8), uint8_t(v & 0xff)}
                      : std::vector<uint8_t>{uint8_t(v & 0xff), uint8_t(v >> 8)};
  };
  std::vector<uint8_t> tiff = {uint8_t(big_endian ? 'M' : 'I'), uint8_t(big_endian ? 'M' : 'I')};
  for (auto part : {u16(42), u16(0), u16(8),  // magic; IFD0 at offset 8 (a u32: high half first)
                    u16(1),                   // one entry
                    u16(0x0112), u16(3), u16(0), u16(1), u16(orientation), u16(0), u16(0),
                    u16(0)})  // tag, SHORT, count 1, the value, padding; no next IFD
    tiff.insert(tiff.end(), part.begin(), part.end());
  if (!big_endian) {  // the IFD offset's halves swap places in little-endian order
    std::swap(tiff[4], tiff[6]);
    std::swap(tiff[5], tiff[7]);
    std::swap(tiff[14], tiff[16]);  // so do the count's
    std::swap(tiff[15], tiff[17]);
  }
  // Built by appending bytes one by one: g++ 12 warns falsely (-Warray-bounds)
  // about vector::insert of one vector into another here.
  const auto length = static_cast<uint16_t>(6 + tiff.size() + 2);
  std::vector<uint8_t> out;
  out.reserve(jpeg.size() + length + 2);
  for (const uint8_t byte : {uint8_t{0xff}, uint8_t{0xd8}, uint8_t{0xff}, uint8_t{0xe1},
                             uint8_t(length >> 8), uint8_t(length & 0xff)})
    out.push_back(byte);
  for (const char ch : {'E', 'x', 'i', 'f', '\0', '\0'})
    out.push_back(static_cast<uint8_t>(ch));
  for (const uint8_t byte : tiff)
    out.push_back(byte);
  for (size_t i = 2; i < jpeg.size(); ++i)
    out.push_back(jpeg[i]);
  return out;
}

TEST(JpegHeader, GivesTheStoredSize) {
  const auto bytes = jpeg_of(/*height=*/37, /*width=*/91);
  const auto header = read_jpeg_header(bytes.data(), bytes.size());
  ASSERT_TRUE(header);
  EXPECT_EQ(header->height, 37);
  EXPECT_EQ(header->width, 91);
  EXPECT_EQ(header->orientation, 1);
  EXPECT_EQ(header->oriented_height(), 37);
}

TEST(JpegHeader, ReadsTheExifOrientationInBothByteOrders) {
  for (const bool big_endian : {true, false}) {
    const auto bytes = with_orientation(jpeg_of(20, 60), 6, big_endian);
    const auto header = read_jpeg_header(bytes.data(), bytes.size());
    ASSERT_TRUE(header) << big_endian;
    EXPECT_EQ(header->orientation, 6) << big_endian;
    EXPECT_EQ(header->oriented_height(), 60);  // a quarter turn
    EXPECT_EQ(header->oriented_width(), 20);
    // OpenCV's decoder applies it the same way.
    const cv::Mat decoded = cv::imdecode(bytes, cv::IMREAD_COLOR);
    EXPECT_EQ(decoded.rows, 60);
    EXPECT_EQ(decoded.cols, 20);
  }
  const auto bad = with_orientation(jpeg_of(20, 60), 9, true);  // out of range: as absent
  EXPECT_EQ(read_jpeg_header(bad.data(), bad.size())->orientation, 1);
}

// libjpeg holds a progressive file's coefficients whole: for 64 x 64 in
// 4:2:0, luma's 8 x 8 blocks of 64 two-byte coefficients and a quarter as
// many for each chroma plane. A baseline file decodes row by row.
TEST(JpegHeader, CountsTheWholeImageCoefficientsOfAProgressiveFile) {
  const cv::Mat image(64, 64, CV_8UC3, cv::Scalar(10, 120, 230));
  std::vector<uint8_t> progressive, baseline;
  cv::imencode(".jpg", image, progressive, {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
  cv::imencode(".jpg", image, baseline);
  EXPECT_EQ(read_jpeg_header(progressive.data(), progressive.size())->coefficient_bytes,
            8 * 8 * 128 + 2 * (4 * 4 * 128));
  EXPECT_EQ(read_jpeg_header(baseline.data(), baseline.size())->coefficient_bytes, 0);
}

TEST(JpegHeader, RefusesWhatIsNotAWholeJpegHeader) {
  const auto bytes = jpeg_of(16, 16);
  EXPECT_FALSE(read_jpeg_header(bytes.data(), 0));
  EXPECT_FALSE(read_jpeg_header(bytes.data(), 1));
  const std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT_FALSE(read_jpeg_header(png.data(), png.size()));
  // Every cut before the frame header's size fields ends the parse cleanly.
  size_t found_at = 0;
  for (size_t n = 0; n <= bytes.size(); ++n) {
    if (read_jpeg_header(bytes.data(), n)) {
      found_at = n;
      break;
    }
  }
  EXPECT_GT(found_at, 20u);
  EXPECT_LT(found_at, bytes.size());
  // A segment whose length runs past the end.
  std::vector<uint8_t> broken = {0xff, 0xd8, 0xff, 0xe0, 0xff, 0xff, 0x00};
  EXPECT_FALSE(read_jpeg_header(broken.data(), broken.size()));
  // A zero-sized frame.
  std::vector<uint8_t> zero = {0xff, 0xd8, 0xff, 0xc0, 0x00, 0x0b, 8, 0, 0, 0, 10, 3};
  EXPECT_FALSE(read_jpeg_header(zero.data(), zero.size()));
}

}  // namespace
