#include "vit/io/figures.hpp"

#include <torch/torch.h>

#include "vit/error.hpp"
#include "vit/io/plot.hpp"

namespace vit::io {

at::Tensor plot_training_curves(const TrainingCurves& curves, const std::string& title) {
  Panel loss;
  loss.title = "Loss";
  loss.x_label = "step";
  loss.y_label = "loss";
  loss.series.push_back({"train", curves.train_step, curves.train_loss, SeriesStyle::kLine, 0});
  loss.series.push_back(
      {"validation", curves.val_step, curves.val_loss, SeriesStyle::kLineAndMarkers, 1});

  Panel accuracy;
  accuracy.title = "Accuracy";
  accuracy.x_label = "step";
  accuracy.y_label = "accuracy";
  if (!curves.train_acc.empty())
    accuracy.series.push_back(
        {"train", curves.train_step, curves.train_acc, SeriesStyle::kLine, 0});
  accuracy.series.push_back(
      {"validation", curves.val_step, curves.val_acc, SeriesStyle::kLineAndMarkers, 1});

  PlotOptions options;
  options.panel_width = 500;
  options.height = 500;
  options.title = title;
  return render_plot({loss, accuracy}, options);
}

at::Tensor plot_attention_distance(const at::Tensor& distance, const std::string& title) {
  if (!distance.defined() || distance.dim() != 2 || distance.numel() == 0) {
    throw Error("plot_attention_distance: distance is " +
                (distance.defined() ? c10::str(distance.sizes()) : std::string("undefined")) +
                ", expected (L, H) pixels with L, H >= 1");
  }
  const at::Tensor values = distance.detach().to(torch::kCPU, torch::kDouble).contiguous();
  const int64_t layers = values.size(0);
  const int64_t heads = values.size(1);
  Panel panel;
  panel.title = title.empty() ? "Mean attention distance" : title;
  panel.x_label = "layer";
  panel.y_label = "mean attention distance (pixels)";
  panel.integer_x = true;
  panel.dodge = heads > 1 ? 0.5 : 0.0;
  panel.y_min = 0.0;
  const double* v = values.data_ptr<double>();
  for (int64_t h = 0; h < heads; ++h) {
    Series series{"head " + std::to_string(h + 1), {}, {}, SeriesStyle::kMarkers};
    for (int64_t l = 0; l < layers; ++l) {
      series.x.push_back(static_cast<double>(l + 1));
      series.y.push_back(v[l * heads + h]);
    }
    panel.series.push_back(std::move(series));
  }
  PlotOptions options;
  options.panel_width = 720;
  options.height = 520;
  return render_plot({panel}, options);
}

}  // namespace vit::io
