// The private tensor <-> cv::Mat bridge of src/io.
#include "../../src/io/mat.hpp"

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/error.hpp"

namespace {

TEST(MatTest, RoundTripsKeepingChannelOrder) {
  const at::Tensor image = torch::arange(3 * 2 * 4).to(torch::kUInt8).view({3, 2, 4});
  const cv::Mat mat = vit::io::detail::to_mat(image, "test");
  ASSERT_EQ(mat.type(), CV_8UC3);
  // Pixel (1, 2) holds channel values 0*8+6, 1*8+6, 2*8+6 in the same order.
  EXPECT_EQ(mat.at<cv::Vec3b>(1, 2), cv::Vec3b(6, 14, 22));
  EXPECT_TRUE(torch::equal(vit::io::detail::from_mat(mat), image));
}

TEST(MatTest, ConvertsDecodedChannelsAndDepths) {
  cv::Mat bgra(1, 1, CV_8UC4, cv::Scalar(1, 2, 3, 4));
  EXPECT_EQ(vit::io::detail::to_uint8_channels(bgra, 3).at<cv::Vec3b>(0, 0), cv::Vec3b(3, 2, 1));
  cv::Mat gray_alpha(1, 1, CV_8UC2, cv::Scalar(9, 200));
  EXPECT_EQ(vit::io::detail::to_uint8_channels(gray_alpha, 3).at<cv::Vec3b>(0, 0),
            cv::Vec3b(9, 9, 9));
  cv::Mat floats(1, 2, CV_32FC1);
  floats.at<float>(0, 0) = 0.5f;
  floats.at<float>(0, 1) = -1.0f;
  const cv::Mat bytes = vit::io::detail::to_uint8_channels(floats, 1);
  EXPECT_EQ(bytes.at<uint8_t>(0, 0), 128);  // 127.5 rounds to even
  EXPECT_EQ(bytes.at<uint8_t>(0, 1), 0);
}

TEST(MatTest, CheckImageNamesTheProblem) {
  try {
    vit::io::detail::check_image(torch::zeros({4, 2, 2}, torch::kUInt8), "where");
    ADD_FAILURE() << "4 channels accepted";
  } catch (const vit::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "where: image is Byte [4, 2, 2], expected uint8 (C, H, W) with C = 1 or 3");
  }
}

}  // namespace
