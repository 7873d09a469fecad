#pragma once
// What `vit --version` prints: vit's version, the LibTorch it was built
// against, whether CUDA is available, and the BLAS that runs the products.
#include <string>

namespace vit::cli {

std::string version_text();

}  // namespace vit::cli
