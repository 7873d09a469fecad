#pragma once
// Shared by the io tests: reading pixels out of uint8 RGB (3, H, W) pictures,
// and expecting a vit::Error with a given message.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "vit/error.hpp"

namespace vit::io::testing {

// {R, G, B} of pixel (y, x).
inline std::vector<int> rgb_at(const at::Tensor& picture, int64_t y, int64_t x) {
  return {picture[0][y][x].item<int>(), picture[1][y][x].item<int>(), picture[2][y][x].item<int>()};
}

// Pixels within `tolerance` of `rgb` on every channel.
inline int64_t count_color(const at::Tensor& picture, const std::vector<int>& rgb,
                           int tolerance = 0) {
  const at::Tensor target = torch::tensor({rgb[0], rgb[1], rgb[2]}).view({3, 1, 1});
  return ((picture.to(torch::kInt) - target).abs().amax(0) <= tolerance).sum().item<int64_t>();
}

// The ends and a middle stop of the white-to-blue scale ("Blues") of the
// matrix pictures (confusion, ablation, CKA).
const std::vector<int> kBluesEmpty = {247, 251, 255};
const std::vector<int> kBluesThreeQuarters = {33, 113, 181};
const std::vector<int> kBluesFull = {8, 48, 107};

// Runs `fn` and expects a vit::Error whose message contains `needle`.
template <typename Fn>
void expect_error(Fn fn, const std::string& needle) {
  EXPECT_TRUE(vit::testing::throws_error_containing(fn, needle));
}

}  // namespace vit::io::testing
