#include "vit/train/evaluate.hpp"

#include <fmt/format.h>
#include <torch/torch.h>

#include "vit/error.hpp"
#include "vit/train/distributed.hpp"

#include "vit/train/precision.hpp"

namespace vit {
namespace {

// float64 (K): the diagonal over each row's total; NaN for a class with no images.
at::Tensor per_class_accuracy(const at::Tensor& confusion) {
  return confusion.diagonal().to(torch::kDouble) / confusion.sum(/*dim=*/1).to(torch::kDouble);
}

}  // namespace

EvalResult evaluate(VisionTransformer& model, const data::BatchSource& loader, int64_t num_classes,
                    Precision precision) {
  model->eval();
  torch::NoGradGuard no_grad;
  const c10::Device device = loader.options().device;
  std::vector<torch::Tensor> losses, predictions, labels;
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
    labels.push_back(batch.labels.cpu());
  }
  EvalResult r;
  r.losses = losses.empty() ? torch::zeros({0}) : torch::cat(losses);
  r.predictions = predictions.empty() ? torch::zeros({0}, torch::kLong) : torch::cat(predictions);
  r.labels = labels.empty() ? torch::zeros({0}, torch::kLong) : torch::cat(labels);
  r.count = r.labels.size(0);
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

EvalResult combine_across_ranks(EvalResult local, ProcessGroup& group) {
  auto totals =
      torch::tensor({local.loss * double(local.count), double(local.count)}, torch::kDouble)
          .to(group.device());
  group.all_reduce_sum(totals, "the evaluation's all-reduce");
  auto confusion = local.confusion.to(group.device());
  group.all_reduce_sum(confusion, "the evaluation's all-reduce");
  EvalResult r = std::move(local);
  r.confusion = confusion.cpu();
  totals = totals.cpu();
  r.count = static_cast<int64_t>(totals[1].item<double>());
  r.loss = r.count > 0 ? totals[0].item<double>() / double(r.count) : 0.0;
  r.accuracy =
      r.count > 0 ? double(r.confusion.diagonal().sum().item<int64_t>()) / double(r.count) : 0.0;
  r.per_class_accuracy = per_class_accuracy(r.confusion);
  return r;
}

}  // namespace vit
