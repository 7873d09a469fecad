#pragma once
// The confusion-matrix picture of `vit eval`.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit::io {

struct ConfusionOptions {
  bool normalize = true;  // show each row as fractions of its true class
  std::string title = "Confusion matrix";
};

// Draws `counts` (K, K), any integer or float dtype, rows = true class and
// columns = predicted class, as a white-to-blue matrix with a colour bar.
// Class names label both axes and each cell shows its fraction (or count)
// while they fit; for large K (e.g. 200) names give way to class-index ticks
// and the cells go without text. `class_names` has K entries, or none for
// indices. Returns uint8 RGB (3, H, W). Throws vit::Error on a non-square
// matrix, negative counts or a wrong number of names.
at::Tensor render_confusion(const at::Tensor& counts, const std::vector<std::string>& class_names,
                            const ConfusionOptions& options = {});

}  // namespace vit::io
