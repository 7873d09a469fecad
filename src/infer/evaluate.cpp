#include "vit/infer/evaluate.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include "vit/error.hpp"
#include "vit/infer/precision.hpp"

namespace vit {

at::Tensor per_class_accuracy(const at::Tensor& confusion) {
  return confusion.diagonal().to(torch::kDouble) / confusion.sum(/*dim=*/1).to(torch::kDouble);
}

EvalResult evaluate(VisionTransformer& model, const data::BatchSource& loader, int64_t num_classes,
                    Precision precision) {
  model->eval();
  torch::NoGradGuard no_grad;
  const c10::Device device = loader.options().device;
  std::vector<torch::Tensor> losses, predictions, labels;
  std::vector<torch::Tensor> in_top5;  // per image, with more than five classes
  for (int64_t step = 0; step < loader.batches_per_epoch(); ++step) {
    const auto batch = loader.batch(/*epoch=*/0, step);
    torch::Tensor logits;
    {
      AutocastScope autocast(precision, device);
      logits = model->forward(batch.images);
    }
    logits = logits.to(torch::kFloat);  // (B, K)
    losses.push_back(torch::nn::functional::cross_entropy(
                         logits, batch.labels,
                         torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone))
                         .cpu());
    predictions.push_back(logits.argmax(/*dim=*/1).cpu());
    if (num_classes > 5)
      in_top5.push_back(std::get<1>(logits.topk(5, /*dim=*/1))
                            .eq(batch.labels.unsqueeze(1))
                            .any(/*dim=*/1)
                            .cpu());
    labels.push_back(batch.labels.cpu());
  }
  EvalResult r;
  r.losses = losses.empty() ? torch::zeros({0}) : torch::cat(losses);
  r.predictions = predictions.empty() ? torch::zeros({0}, torch::kLong) : torch::cat(predictions);
  r.labels = labels.empty() ? torch::zeros({0}, torch::kLong) : torch::cat(labels);
  r.count = r.labels.size(0);
  if (num_classes > 5)
    r.top5_correct = in_top5.empty() ? 0 : torch::cat(in_top5).sum().item<int64_t>();
  const int64_t max_label = r.count > 0 ? r.labels.max().item<int64_t>() : -1;
  if (max_label >= num_classes)
    throw Error(
        fmt::format("the data has labels up to {} but the model has {} classes (model.num_classes)",
                    max_label, num_classes));
  r.confusion = torch::bincount(r.labels * num_classes + r.predictions, /*weights=*/{},
                                /*minlength=*/num_classes * num_classes)
                    .reshape({num_classes, num_classes});  // (K, K)
  if (r.count > 0) {
    r.loss = r.losses.to(torch::kDouble).mean().item<double>();
    r.accuracy = r.predictions.eq(r.labels).to(torch::kDouble).mean().item<double>();
  }
  r.per_class_accuracy = per_class_accuracy(r.confusion);
  return r;
}

}  // namespace vit
