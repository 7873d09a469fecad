#pragma once
// Resizing the patch-embedding kernel to another patch size with FlexiViT's
// pseudo-inverse resize (Beyer et al., 2023, section 3.4): w' = pinv(B^T) w, B the
// bilinear resize of a patch, so that <B x, w'> = <x, w> in the least-squares sense.
// Growing the patch (Q >= P) this is exact: an upsampled image gives the same tokens.
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
