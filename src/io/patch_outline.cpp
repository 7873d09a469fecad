#include "vit/io/patch_outline.hpp"

#include <algorithm>
#include <string>

#include <opencv2/imgproc.hpp>

#include "mat.hpp"
#include "vit/error.hpp"
#include "vit/io/heatmap.hpp"

namespace vit::io {

at::Tensor outlined_patch(const at::Tensor& image, int64_t row, int64_t column, int64_t patch_size,
                          int64_t min_side, const std::array<uint8_t, 3>& color) {
  detail::check_image(image, "outlined_patch");
  const int64_t height = image.size(1), width = image.size(2);
  if (patch_size < 1 || row < 0 || column < 0 || (row + 1) * patch_size > height ||
      (column + 1) * patch_size > width)
    throw Error("outlined_patch: patch (" + std::to_string(row) + ", " + std::to_string(column) +
                ") of side " + std::to_string(patch_size) + " is outside a " +
                std::to_string(height) + "x" + std::to_string(width) + " image");
  const int64_t scale = display_scale(height, width, min_side);
  cv::Mat mat = detail::to_mat(image, "outlined_patch");
  if (mat.channels() == 1) cv::cvtColor(mat, mat, cv::COLOR_GRAY2RGB);
  if (scale > 1) cv::resize(mat, mat, {}, scale, scale, cv::INTER_NEAREST);
  // Four strips inside the patch's square, so that the ring is exactly 2 pixels wide.
  constexpr int kThickness = 2;
  const int side = static_cast<int>(patch_size * scale);
  const int x = static_cast<int>(column * patch_size * scale);
  const int y = static_cast<int>(row * patch_size * scale);
  const int ring = std::min(kThickness, side);
  const cv::Scalar paint(color[0], color[1], color[2]);
  for (const cv::Rect& strip :
       {cv::Rect(x, y, side, ring), cv::Rect(x, y + side - ring, side, ring),
        cv::Rect(x, y, ring, side), cv::Rect(x + side - ring, y, ring, side)})
    mat(strip).setTo(paint);
  return detail::from_mat(mat);
}

}  // namespace vit::io
