#include "vit/analysis/sae_file.hpp"

#include <cstdlib>

#include <fmt/format.h>
#include <torch/torch.h>

#include "vit/error.hpp"
#include "vit/weights/safetensors.hpp"

namespace vit {
namespace {

constexpr char kFormat[] = "vit-sae";

const at::Tensor& tensor_named(const TensorMap& tensors, const std::string& name, int64_t dims,
                               const std::string& path) {
  const auto it = tensors.find(name);
  if (it == tensors.end())
    throw Error(path + ": no tensor '" + name + "'; not a sparse autoencoder vit sae train wrote");
  if (it->second.dim() != dims)
    throw Error(path + ": '" + name + "' has shape " + c10::str(it->second.sizes()) +
                ", expected " + std::to_string(dims) + " dimensions");
  return it->second;
}

int64_t integer_entry(const StringMap& metadata, const std::string& key, const std::string& path) {
  const auto it = metadata.find(key);
  try {
    if (it != metadata.end()) {
      size_t used = 0;
      const int64_t value = std::stoll(it->second, &used);
      if (used == it->second.size()) return value;
    }
  } catch (const std::exception&) {
  }
  throw Error(path + ": metadata '" + key + "' is " +
              (it == metadata.end() ? std::string("missing") : "'" + it->second + "'") +
              ", expected a whole number");
}

}  // namespace

void save_sae(const std::string& path, const SaeFile& file) {
  const SparseAutoencoder& sae = file.sae;
  const auto cpu = [](const at::Tensor& t) { return t.detach().to(torch::kCPU, torch::kFloat); };
  write_safetensors(path,
                    {{"W_enc", cpu(sae.W_enc)},
                     {"b_enc", cpu(sae.b_enc)},
                     {"W_dec", cpu(sae.W_dec)},
                     {"b_dec", cpu(sae.b_dec)}},
                    {{"format", kFormat},
                     {"layer", std::to_string(file.layer)},
                     {"k", std::to_string(sae.k)},
                     {"l1", fmt::format("{}", file.l1)},
                     {"width", std::to_string(sae.width())}});
}

SaeFile load_sae(const std::string& path) {
  const SafetensorsContents contents = read_safetensors(path);
  const auto format = contents.metadata.find("format");
  if (format == contents.metadata.end() || format->second != kFormat)
    throw Error(path + ": not a sparse autoencoder vit sae train wrote (no \"format\": \"" +
                kFormat + "\" in its metadata)");
  SaeFile file;
  SparseAutoencoder& sae = file.sae;
  sae.W_enc = tensor_named(contents.tensors, "W_enc", 2, path).to(torch::kFloat);
  sae.b_enc = tensor_named(contents.tensors, "b_enc", 1, path).to(torch::kFloat);
  sae.W_dec = tensor_named(contents.tensors, "W_dec", 2, path).to(torch::kFloat);
  sae.b_dec = tensor_named(contents.tensors, "b_dec", 1, path).to(torch::kFloat);
  const int64_t width = sae.W_enc.size(0), features = sae.W_enc.size(1);
  if (width < 1 || features < 1 || sae.b_enc.size(0) != features ||
      sae.W_dec.sizes() != at::IntArrayRef{features, width} || sae.b_dec.size(0) != width)
    throw Error(path + ": inconsistent shapes W_enc " + c10::str(sae.W_enc.sizes()) + ", b_enc " +
                c10::str(sae.b_enc.sizes()) + ", W_dec " + c10::str(sae.W_dec.sizes()) +
                ", b_dec " + c10::str(sae.b_dec.sizes()));
  sae.k = integer_entry(contents.metadata, "k", path);
  if (sae.k < 0 || sae.k > features)
    throw Error(path + ": k " + std::to_string(sae.k) + " for " + std::to_string(features) +
                " features");
  file.layer = integer_entry(contents.metadata, "layer", path);
  if (file.layer < 0) throw Error(path + ": layer " + std::to_string(file.layer));
  const auto l1 = contents.metadata.find("l1");
  if (l1 != contents.metadata.end()) {
    char* end = nullptr;
    file.l1 = std::strtod(l1->second.c_str(), &end);
    if (l1->second.empty() || *end != '\0' || !(file.l1 >= 0))
      throw Error(path + ": metadata 'l1' is '" + l1->second + "', expected a penalty >= 0");
  }
  return file;
}

void check_sae_fits(const SaeFile& file, const ModelConfig& model, const std::string& path) {
  if (file.sae.width() != model.dim)
    throw Error(fmt::format("{}: a sparse autoencoder of width {}, but the model's width is {}",
                            path, file.sae.width(), model.dim));
  if (file.layer > model.depth)
    throw Error(fmt::format("{}: trained on layer {}, but the model has layers 0..{}", path,
                            file.layer, model.depth));
}

}  // namespace vit
