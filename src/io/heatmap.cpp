#include "vit/io/heatmap.hpp"

#include <string>

#include <torch/torch.h>
#include <opencv2/imgproc.hpp>

#include "mat.hpp"
#include "vit/error.hpp"

namespace vit::io {
namespace {

cv::Mat enlarged_rgb(const at::Tensor& image, int64_t scale, const std::string& where) {
  cv::Mat mat = detail::to_mat(image, where);
  if (mat.channels() == 1) cv::cvtColor(mat, mat, cv::COLOR_GRAY2RGB);
  if (scale > 1) cv::resize(mat, mat, {}, scale, scale, cv::INTER_NEAREST);
  return mat;
}

// (gh, gw) float mask -> JET colours at `size`, RGB.
cv::Mat jet_colors(const at::Tensor& mask, cv::Size size) {
  if (!mask.defined() || mask.dim() != 2 || mask.size(0) <= 0 || mask.size(1) <= 0) {
    throw Error("heatmap: mask is " +
                (mask.defined() ? c10::str(mask.sizes()) : std::string("undefined")) +
                ", expected a 2-D (g, g) map");
  }
  const at::Tensor values =
      mask.detach().to(torch::kCPU, torch::kFloat).nan_to_num(0.0).clamp(0.0, 1.0).contiguous();
  const cv::Mat small(static_cast<int>(values.size(0)), static_cast<int>(values.size(1)), CV_32FC1,
                      values.data_ptr<float>());
  cv::Mat smooth;
  cv::resize(small, smooth, size, 0, 0, cv::INTER_CUBIC);
  cv::Mat levels;
  smooth.convertTo(levels, CV_8U, 255.0);  // saturates the bicubic overshoot back to [0, 255]
  cv::Mat colors;
  cv::applyColorMap(levels, colors, cv::COLORMAP_JET);  // BGR
  cv::cvtColor(colors, colors, cv::COLOR_BGR2RGB);
  return colors;
}

cv::Mat blend(const cv::Mat& picture, const at::Tensor& mask, double alpha) {
  if (!(alpha >= 0.0 && alpha <= 1.0)) {
    throw Error("heatmap: alpha " + std::to_string(alpha) + ", expected a value in [0, 1]");
  }
  cv::Mat blended;
  cv::addWeighted(picture, 1.0 - alpha, jet_colors(mask, picture.size()), alpha, 0.0, blended);
  return blended;
}

}  // namespace

int64_t display_scale(int64_t height, int64_t width, int64_t min_side) {
  const int64_t shorter = std::min(height, width);
  if (shorter <= 0 || shorter >= min_side) return 1;
  return (min_side + shorter - 1) / shorter;
}

at::Tensor heatmap_overlay(const at::Tensor& image, const at::Tensor& mask, double alpha,
                           int64_t min_side) {
  detail::check_image(image, "heatmap_overlay");
  const int64_t scale = display_scale(image.size(1), image.size(2), min_side);
  return detail::from_mat(blend(enlarged_rgb(image, scale, "heatmap_overlay"), mask, alpha));
}

at::Tensor heatmap_beside(const at::Tensor& image, const at::Tensor& mask, double alpha,
                          int64_t min_side, int64_t gap) {
  detail::check_image(image, "heatmap_beside");
  const int64_t scale = display_scale(image.size(1), image.size(2), min_side);
  const cv::Mat original = enlarged_rgb(image, scale, "heatmap_beside");
  const cv::Mat overlay = blend(original, mask, alpha);
  const int spacing = static_cast<int>(std::max<int64_t>(0, gap));
  cv::Mat canvas(original.rows, 2 * original.cols + spacing, CV_8UC3, cv::Scalar::all(255));
  original.copyTo(canvas(cv::Rect(0, 0, original.cols, original.rows)));
  overlay.copyTo(canvas(cv::Rect(original.cols + spacing, 0, overlay.cols, overlay.rows)));
  return detail::from_mat(canvas);
}

}  // namespace vit::io
