#pragma once
// Resizing the patch-embedding kernel to another patch size with FlexiViT's
// pseudo-inverse resize (Beyer et al., 2023, section 3.4). A patch x of side P
// shown at side Q is B x, where B is bilinear resizing (a Q*Q x P*P matrix).
// The new kernel w' should give every patch the token the old one gave:
// <B x, w'> = <x, w> for all x, i.e. B^T w' = w, solved in the least-squares
// sense as w' = pinv(B^T) w. Growing the patch (Q >= P) this is exact, so
// the tokens of an upsampled image are those of the original; shrinking it
// loses what the smaller patch cannot show, in the least-squares sense.
// Plain bilinear resizing of w would instead scale every token by about
// (P/Q)^2 and blur it, which the next LayerNorm cannot undo for the bias.
//
// Shape key: D width, C channels, P old patch side, Q new patch side.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace vit {

// (D, C, P, P) -> (D, C, Q, Q), in the input's dtype and on its device.
// Throws vit::Error unless the kernel is square and 4-D, and Q >= 1.
at::Tensor resize_patch_kernel(const at::Tensor& kernel, int64_t new_patch);

// The bilinear resize (align_corners = false) of one P x P patch to Q x Q as
// a matrix: (Q*Q, P*P), row-major pixels. float64, on the CPU.
at::Tensor bilinear_resize_matrix(int64_t patch, int64_t new_patch);

}  // namespace vit
