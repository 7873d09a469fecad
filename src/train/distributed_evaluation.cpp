#include "vit/train/distributed_evaluation.hpp"

#include <torch/torch.h>

#include "vit/train/distributed.hpp"

namespace vit {

EvalResult combine_across_ranks(EvalResult local, ProcessGroup& group) {
  auto totals = torch::tensor({local.loss * double(local.count), double(local.count),
                               double(local.top5_correct)},
                              torch::kDouble)
                    .to(group.device());
  group.all_reduce_sum(totals, "the evaluation's all-reduce");
  auto confusion = local.confusion.to(group.device());
  group.all_reduce_sum(confusion, "the evaluation's all-reduce");
  EvalResult r = std::move(local);
  r.confusion = confusion.cpu();
  totals = totals.cpu();
  r.count = static_cast<int64_t>(totals[1].item<double>());
  r.loss = r.count > 0 ? totals[0].item<double>() / double(r.count) : 0.0;
  if (r.has_top5()) r.top5_correct = static_cast<int64_t>(totals[2].item<double>());
  r.accuracy =
      r.count > 0 ? double(r.confusion.diagonal().sum().item<int64_t>()) / double(r.count) : 0.0;
  r.per_class_accuracy = per_class_accuracy(r.confusion);
  return r;
}

}  // namespace vit
