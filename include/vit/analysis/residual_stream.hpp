#pragma once
// The residual stream between blocks, read and changed without hooks (a
// BlockVisitor), on the explicit attention, in the model's eval mode. Layer l
// (0 <= l <= L) is the stream after block l; layer 0 is the embeddings.
// Shape key: L layers, B batch, N tokens (class token first), D width,
//            H heads, Dh head width, I = H*Dh, K classes.
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "vit/model/vision_transformer.hpp"

namespace vit {

struct ResidualStream {
  std::vector<at::Tensor> layers;  // L+1 of (B,N,D)
  std::vector<at::Tensor> heads;   // L of (B,N,I), the merged heads before each output projection,
                                   //   when asked for
};

// The stream of `inputs` (B,C,S,S), normalised, without gradients.
ResidualStream residual_stream(VisionTransformer& model, const at::Tensor& inputs,
                               bool with_heads = false);

// The same from layer 0 given (B,N,D), in the current grad mode: with gradients on,
// every layer and head output is part of the graph.
ResidualStream stream_from(VisionTransformer& model, const at::Tensor& embedded,
                           bool with_heads = false);

// What an ablation changes in one block.
struct BlockAblation {
  explicit BlockAblation(int64_t block, int64_t head = -1) : block(block), head(head) {}
  int64_t block;
  int64_t head;           // the head whose slice of the merged heads is replaced; -1: none
  at::Tensor head_value;  // (N,Dh) or (B,N,Dh) to put there; undefined: zeros
  BlockSkip skip;         // the attention or MLP branch left out
};

// The logits (B,K) from the stream `before` (B,N,D) entering block `ablation.block`,
// with the ablation there and every later block intact. Without gradients.
at::Tensor logits_after(VisionTransformer& model, const at::Tensor& before,
                        const BlockAblation& ablation);

// The logits (B,K) of layer `layer`'s stream (B,N,D) (0..L) run on unchanged through
// blocks layer..L-1 and the head. Without gradients.
at::Tensor logits_from_layer(VisionTransformer& model, const at::Tensor& stream, int64_t layer);

}  // namespace vit
