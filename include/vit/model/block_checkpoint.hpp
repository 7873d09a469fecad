#pragma once
// Activation checkpointing of one block (train.grad_checkpointing), as
// torch.utils.checkpoint's reentrant form: the forward pass keeps the block's
// input alone, and the backward pass runs the block again with gradients, in
// the same autocast, on the same low-precision weight copies
// (model/weight_substitution) and with the same random draws (dropout,
// attention dropout, drop-path), then backpropagates through that recompute.
//
// The block's output is a whole tensor, so the fusion of its last residual
// add with the next block's norm1 (model/residual.hpp) does not cross a
// checkpointed block's edge: the add runs inside the block, the norm in the
// next. Everything within the block runs the same kernels as without
// checkpointing.
#include <torch/types.h>

#include "vit/model/block.hpp"

namespace vit {

// block.run(x, {}, {}, rows) as above: (B,N,D) -> (B,Nq,D). Where gradients
// are off, the block simply runs.
torch::Tensor run_checkpointed(BlockImpl& block, const torch::Tensor& x, QueryRows rows);

}  // namespace vit
