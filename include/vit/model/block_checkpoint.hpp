#pragma once
// Activation checkpointing of one block (train.grad_checkpointing), as
// torch.utils.checkpoint's reentrant form: the forward pass keeps the block's input
// alone, and the backward pass runs the block again with gradients, in the same
// autocast, weight copies and random draws, then backpropagates through it.
#include <torch/types.h>

#include "vit/model/block.hpp"

namespace vit {

// block.run(x, {}, {}, rows) as above: (B,N,D) -> (B,Nq,D). Where gradients
// are off, the block simply runs.
torch::Tensor run_checkpointed(BlockImpl& block, const torch::Tensor& x, QueryRows rows);

}  // namespace vit
