#include "vit/io/confusion.hpp"

#include <algorithm>

#include <torch/torch.h>

#include "vit/error.hpp"
#include "vit/io/matrix_figure.hpp"

namespace vit::io {
namespace {

// The values to show, (K, K) doubles: row fractions or the counts themselves.
at::Tensor cell_values(const at::Tensor& counts, bool normalize) {
  at::Tensor values = counts.detach().to(torch::kCPU, torch::kDouble).nan_to_num(0.0);
  if (normalize) {
    const at::Tensor rows = values.sum(1, /*keepdim=*/true).clamp_min(1e-300);
    values = values / rows;
  }
  return values.contiguous();
}

void check_counts(const at::Tensor& counts, const std::vector<std::string>& names) {
  if (!counts.defined() || counts.dim() != 2 || counts.size(0) != counts.size(1) ||
      counts.size(0) == 0) {
    throw Error("render_confusion: counts are " +
                (counts.defined() ? c10::str(counts.sizes()) : std::string("undefined")) +
                ", expected a square (K, K) matrix with K >= 1");
  }
  if (counts.is_complex() || counts.scalar_type() == torch::kBool) {
    throw Error("render_confusion: counts have dtype " +
                std::string(c10::toString(counts.scalar_type())) + ", expected numbers");
  }
  if ((counts.to(torch::kDouble) < 0).any().item<bool>()) {
    throw Error("render_confusion: counts contain negative values, expected counts >= 0");
  }
  if (!names.empty() && static_cast<int64_t>(names.size()) != counts.size(0)) {
    throw Error("render_confusion: " + std::to_string(names.size()) + " class names for a " +
                std::to_string(counts.size(0)) + " x " + std::to_string(counts.size(0)) +
                " matrix, expected " + std::to_string(counts.size(0)) + " (or none)");
  }
}

}  // namespace

at::Tensor render_confusion(const at::Tensor& counts, const std::vector<std::string>& class_names,
                            const ConfusionOptions& options) {
  check_counts(counts, class_names);
  const at::Tensor values = cell_values(counts, options.normalize);
  MatrixFigureOptions figure;
  figure.title = options.title;
  figure.row_axis = "true";
  figure.column_axis = "predicted";
  figure.high = options.normalize ? 1.0 : std::max(1.0, values.max().item<double>());
  figure.decimals = options.normalize ? 2 : 0;
  return render_matrix(values, class_names, class_names, figure);
}

}  // namespace vit::io
