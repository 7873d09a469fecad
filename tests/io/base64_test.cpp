#include "vit/io/base64.hpp"

#include <gtest/gtest.h>

namespace vit::io {
namespace {

std::string encode(const std::string& text) {
  return base64_encode(reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

// RFC 4648, section 10.
TEST(Base64, RfcTestVectors) {
  EXPECT_EQ(encode(""), "");
  EXPECT_EQ(encode("f"), "Zg==");
  EXPECT_EQ(encode("fo"), "Zm8=");
  EXPECT_EQ(encode("foo"), "Zm9v");
  EXPECT_EQ(encode("foob"), "Zm9vYg==");
  EXPECT_EQ(encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(encode("foobar"), "Zm9vYmFy");
}

TEST(Base64, HighBytesUseTheLastLetters) {
  EXPECT_EQ(base64_encode(std::vector<uint8_t>{0xfb, 0xff, 0xbf}), "+/+/");
  EXPECT_EQ(base64_encode(std::vector<uint8_t>{0x89, 'P', 'N', 'G'}), "iVBORw==");
}

}  // namespace
}  // namespace vit::io
