#include "cli/version.hpp"

#include <dlfcn.h>

#include <ATen/Version.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "vit/build_features.hpp"
#include "vit/cpu_isa.hpp"

namespace vit::cli {
namespace {

// The value of KEY=VALUE in LibTorch's build settings (at::show_config()).
std::string build_setting(const std::string& key) {
  const std::string config = at::show_config();
  const auto at = config.find(key + "=");
  if (at == std::string::npos) return "";
  const auto start = at + key.size() + 1;
  return config.substr(start, config.find_first_of(", \n", start) - start);
}

// pip's LibTorch bundles MKL, which its build settings name. Debian's
// ("generic") reaches BLAS through the libblas.so.3 alternative, so the
// library in use is whichever that is: OpenBLAS names itself and its file.
// (OpenBLAS may be loaded on the pip line too, for OpenCV; LibTorch does not
// call it there.)
std::string blas_in_use() {
  const std::string built_with = build_setting("BLAS_INFO");
  if (built_with == "mkl") return "MKL (built into LibTorch)";
  using ConfigFunction = const char* (*)();
  if (void* symbol = ::dlsym(RTLD_DEFAULT, "openblas_get_config")) {
    std::string text = reinterpret_cast<ConfigFunction>(symbol)();
    Dl_info library{};
    if (::dladdr(symbol, &library) != 0 && library.dli_fname)
      text += fmt::format(" ({})", library.dli_fname);
    return text;
  }
  return built_with.empty() ? "unknown" : built_with + " (libblas.so.3)";
}

std::string cuda_state() {
  if (!torch::cuda::is_available()) return "not available";
  const auto count = torch::cuda::device_count();
  return fmt::format("available, {} GPU{}", count, count == 1 ? "" : "s");
}

}  // namespace

std::string version_text() {
  return fmt::format("vit {}\nLibTorch {}.{}.{}\nCUDA: {}\nBLAS: {}\nCPU: {}", VIT_VERSION,
                     TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH, cuda_state(),
                     blas_in_use(), cpu_isa_name(detected_cpu_isa()));
}

}  // namespace vit::cli
