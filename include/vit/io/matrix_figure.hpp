#pragma once
// A labelled matrix as a heat map: the confusion matrix of `vit eval`, the
// layer x head ablation of `vit ablate`, the layer x layer CKA of `vit cka`.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vit::io {

struct MatrixFigureOptions {
  std::string title;
  std::string row_axis;          // written down the left, e.g. "true", "layer"
  std::string column_axis;       // written under the matrix, e.g. "predicted", "head"
  double low = 0.0, high = 1.0;  // the colour scale: white at `low`, dark blue at `high`
  int decimals = 2;              // of the number in each cell, while numbers fit
};

// Draws `values` (R, C), any real dtype, as cells coloured on the options'
// scale (values outside it take its end colours) with a colour bar. Row and
// column names label the axes (turned along the bottom) while they fit; for
// large matrices they give way to index ticks and the cells go without text.
// Empty names: the indices. NaN cells are left grey. Returns uint8 RGB (3, H, W).
// Throws vit::Error for a matrix that is not 2-D and non-empty, a wrong number
// of names, or low >= high.
at::Tensor render_matrix(const at::Tensor& values, const std::vector<std::string>& row_names,
                         const std::vector<std::string>& column_names,
                         const MatrixFigureOptions& options);

}  // namespace vit::io
