// Shape key: D width, C channels, P old patch side, Q new patch side.
//
// A patch x of side P shown at side Q is B x, where B is bilinear resizing (a
// Q*Q x P*P matrix). The new kernel w' should give every patch the token the old one
// gave: <B x, w'> = <x, w> for all x, i.e. B^T w' = w, solved in the least-squares
// sense as w' = pinv(B^T) w. Shrinking the patch loses what the smaller patch cannot
// show. Plain bilinear resizing of w would instead scale every token by about
// (P/Q)^2 and blur it, which the next LayerNorm cannot undo for the bias.
#include "vit/weights/patch_embed_resize.hpp"

#include <string>

#include <torch/torch.h>

#include "vit/error.hpp"

namespace vit {

at::Tensor bilinear_resize_matrix(int64_t patch, int64_t new_patch) {
  namespace F = torch::nn::functional;
  const int64_t n = patch * patch;
  // Resizing each one-hot patch gives one column of the matrix.
  const auto basis = torch::eye(n, torch::kDouble).reshape({n, 1, patch, patch});  // (P*P, 1, P, P)
  const auto resized = F::interpolate(basis, F::InterpolateFuncOptions()
                                                 .size(std::vector<int64_t>{new_patch, new_patch})
                                                 .mode(torch::kBilinear)
                                                 .align_corners(false));  // (P*P, 1, Q, Q)
  return resized.reshape({n, new_patch * new_patch}).t().contiguous();    // (Q*Q, P*P)
}

at::Tensor resize_patch_kernel(const at::Tensor& kernel, int64_t new_patch) {
  if (!kernel.defined() || kernel.dim() != 4 || kernel.size(2) != kernel.size(3))
    throw Error("patch_embed.proj.weight: shape " +
                (kernel.defined() ? c10::str(kernel.sizes()) : std::string("[]")) +
                ", expected [D, C, P, P]");
  if (new_patch < 1)
    throw Error("patch kernel resize: new patch side " + std::to_string(new_patch) +
                ", expected >= 1");
  const int64_t D = kernel.size(0), C = kernel.size(1), P = kernel.size(2);
  if (new_patch == P) return kernel.clone();
  const auto resize = bilinear_resize_matrix(P, new_patch);                          // (Q*Q, P*P)
  const auto inverse = at::linalg_pinv(resize.t());                                  // (Q*Q, P*P)
  const auto flat = kernel.to(torch::kCPU, torch::kDouble).reshape({D * C, P * P});  // (D*C, P*P)
  const auto resized = flat.matmul(inverse.t());  // (D*C, Q*Q): each row is pinv(B^T) w
  return resized.reshape({D, C, new_patch, new_patch})
      .to(kernel.device(), kernel.scalar_type());  // (D, C, Q, Q)
}

}  // namespace vit
