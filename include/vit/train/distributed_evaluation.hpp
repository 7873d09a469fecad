#pragma once
// One split evaluated by every rank of a data-parallel run, each on its share.
#include "vit/infer/evaluate.hpp"

namespace vit {

class ProcessGroup;

// Data parallelism: each rank evaluated its share of a split; the sum of their
// losses and confusion matrices gives the loss, accuracy and per-class
// accuracy of the whole split, the same as one process would report. The
// per-image tensors (losses, predictions, labels) stay this rank's own.
EvalResult combine_across_ranks(EvalResult local, ProcessGroup& group);

}  // namespace vit
