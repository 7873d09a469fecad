#pragma once
// Linear probes (Alain & Bengio, 2016): how much of the class a frozen layer holds,
// read by logistic regression on its pooled representation.
// Shape key: L layers, n images, D width, K classes.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/analysis/image_batches.hpp"
#include "vit/model/vision_transformer.hpp"

namespace vit {

// Every layer pooled as the head would read it, before the final norm: L+1 tensors
// float (n, D) on the CPU. Without gradients.
std::vector<at::Tensor> pooled_layers(VisionTransformer& model, const ImageBatches& images);

struct LinearProbe {
  at::Tensor mean, std;     // (D) of the training features: the standardisation
  at::Tensor weight, bias;  // (K, D), (K), float64, on standardised features
};

// Multinomial logistic regression on standardised `features` (n, D) (a constant
// feature divides by 1) for `labels` int64 (n): the mean cross-entropy plus
// l2 * ||weight||^2 (not the bias), minimised deterministically. Throws vit::Error
// for l2 < 0, mismatched shapes, no images or labels outside [0, classes).
LinearProbe fit_linear_probe(const at::Tensor& features, const at::Tensor& labels, int64_t classes,
                             double l2);

// float64 (n, K) for features (n, D).
at::Tensor probe_logits(const LinearProbe& probe, const at::Tensor& features);

// The fraction of rows of `logits` (n, K) whose top-1 is the label.
double top1_accuracy(const at::Tensor& logits, const at::Tensor& labels);

}  // namespace vit
