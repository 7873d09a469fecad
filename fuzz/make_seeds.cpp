// make_seeds DIR: writes the seed corpora DIR/<target>/ (small valid files of
// every format the targets read, see entry_points.cpp for each input layout)
// and the JSON-key dictionary DIR/config.dict. scripts/fuzz.sh runs it.
#include <filesystem>
#include <fstream>
#include <iostream>

#include <torch/torch.h>
#include <zlib.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "archive_writer.hpp"
#include "deflated.hpp"
#include "vit/config.hpp"
#include "vit/io/image_io.hpp"
#include "vit/model/vision_transformer.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit/weights/safetensors.hpp"
#include "vit/weights/timm_layout.hpp"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

namespace {

void write(const fs::path& path, const Bytes& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

void write(const fs::path& path, const std::string& text) {
  write(path, Bytes(text.begin(), text.end()));
}

Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

void put_u32(Bytes& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<uint8_t>(v >> shift));
}

Bytes gzip(const Bytes& in) {
  return vit::fuzz::deflated(in.data(), in.size(), vit::fuzz::DeflateWrapper::kGzip);
}

void idx_seeds(const fs::path& dir) {
  Bytes images;  // 3 images of 4 x 4
  put_u32(images, 2051);
  for (uint32_t d : {3u, 4u, 4u})
    put_u32(images, d);
  for (int i = 0; i < 48; ++i)
    images.push_back(static_cast<uint8_t>(i * 5));
  Bytes labels;
  put_u32(labels, 2049);
  put_u32(labels, 3);
  for (uint8_t l : {0, 7, 9})
    labels.push_back(l);
  // Mode byte: bit 0 = labels, bit 1 = the harness gzips the rest.
  write(dir / "images", cat({0}, images));
  write(dir / "labels", cat({1}, labels));
  write(dir / "images_gzipped_by_harness", cat({2}, images));
  write(dir / "images.gz", cat({0}, gzip(images)));
  write(dir / "labels.gz", cat({1}, gzip(labels)));
}

void cifar_seeds(const fs::path& dir) {
  for (int kind : {0, 1}) {
    Bytes bytes{static_cast<uint8_t>(kind)};
    for (int r = 0; r < 2; ++r) {
      if (kind == 1) bytes.push_back(static_cast<uint8_t>(r * 3));  // coarse label
      bytes.push_back(static_cast<uint8_t>(r * 7));
      for (int i = 0; i < 3072; ++i)
        bytes.push_back(static_cast<uint8_t>(i * 31 + r));
    }
    write(dir / (kind ? "cifar100" : "cifar10"), bytes);
  }
}

void tiny_imagenet_seeds(const fs::path& dir) {
  write(dir / "two_classes",
        "n01443537\nn01629819\n----\nval_0.JPEG\tn01443537\t0\t32\t44\t62\n"
        "val_1.JPEG\tn01629819\t52\t55\t57\t59\n");
  write(dir / "crlf", "n01443537\r\n\r\n----\nval_0.JPEG\tn01443537\r\n");
}

vit::Config tiny_config() {
  vit::Config c;
  c.model.image_size = 8;
  c.model.patch_size = 4;
  c.model.channels = 1;
  c.model.num_classes = 2;
  c.model.dim = 8;
  c.model.depth = 1;
  c.model.heads = 2;
  c.model.mlp_dim = 8;
  c.data.dataset = vit::DatasetKind::kMnist;
  c.data.mean = {0.5};
  c.data.std = {0.5};
  return c;
}

void safetensors_seeds(const fs::path& dir) {
  const vit::Config config = tiny_config();
  vit::VisionTransformer model(config.model);
  write(dir / "vit_export",
        vit::serialize_safetensors(vit::state_tensors(model),
                                   vit::export_metadata(config, {"zero", "one"})));
  vit::TensorMap mixed{{"a", torch::arange(6, torch::kFloat).reshape({2, 3})},
                       {"b", torch::ones({3}, torch::kHalf)},
                       {"c", torch::zeros({2, 2}, torch::kLong)},
                       {"d", torch::ones({0}, torch::kByte)}};
  write(dir / "dtypes", vit::serialize_safetensors(mixed, {{"format", "pt"}}));
}

// What load_model reads of a training checkpoint: "meta" and "model".
void checkpoint_seeds(const fs::path& dir) {
  vit::CheckpointMeta meta;
  meta.config = tiny_config();
  meta.class_names = {"zero", "one"};
  vit::VisionTransformer model(meta.config.model);
  torch::serialize::OutputArchive archive, model_archive;
  archive.write(vit::kMetaKey, c10::IValue(vit::meta_to_json(meta)));
  model->save(model_archive);
  archive.write(vit::kModelKey, model_archive);
  fs::create_directories(dir);
  archive.save_to((dir / "tiny.pt").string());
}

void config_seeds(const fs::path& dir, const fs::path& configs) {
  write(dir / "empty", "{}");
  write(dir / "tiny_with_sets", vit::config_to_json_string(tiny_config()) +
                                    "\n----\nmodel.depth=2\ndata.mean=[0.5]\ndata.dataset=cifar10\n"
                                    "train.freeze=backbone\nname=x\n");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(configs, ec)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    write(dir / entry.path().filename(), std::string(std::istreambuf_iterator<char>(in), {}));
  }
}

void collect_keys(const nlohmann::json& j, std::set<std::string>& keys) {
  for (const auto& [key, value] : j.items()) {
    keys.insert(key);
    if (value.is_object()) collect_keys(value, keys);
  }
}

// Every key and dotted path of the config, and the string values it knows.
void config_dict(const fs::path& file) {
  std::set<std::string> keys;
  collect_keys(vit::config_to_json(vit::Config{}), keys);
  std::string text = "# config keys, written by make_seeds\n";
  for (const auto& k : keys)
    text += "\"\\\"" + k + "\\\"\"\n";
  for (const char* v : {"cifar10",
                        "cifar100",
                        "mnist",
                        "fashion-mnist",
                        "tiny-imagenet",
                        "image-folder",
                        "cls",
                        "mean",
                        "reflect",
                        "zeros",
                        "adamw",
                        "sgd",
                        "bf16",
                        "fp16",
                        "fp32",
                        "backbone",
                        "none",
                        "cuda:0",
                        "\\x0a----\\x0a",
                        "model.",
                        "data.augment.",
                        "train.",
                        "analysis.",
                        "=",
                        "1e308",
                        "-0",
                        "[]"})
    text += "\"" + std::string(v) + "\"\n";
  write(file, text);
}

void image_seeds(const fs::path& dir) {
  const auto rgb =
      torch::arange(3 * 5 * 7, torch::kInt).remainder(256).to(torch::kByte).reshape({3, 5, 7});
  // First byte: bit 0 = RGB; the rest (mod 65) = side, 0 keeps the size.
  write(dir / "rgb.png", cat({1}, vit::io::encode_png(rgb)));
  write(dir / "gray.png", cat({8}, vit::io::encode_png(rgb.slice(0, 0, 1).contiguous())));
  cv::Mat mat(6, 5, CV_8UC3, cv::Scalar(10, 200, 30));
  for (const char* ext : {".jpg", ".bmp", ".tiff", ".webp", ".ppm"}) {
    std::vector<uchar> bytes;
    if (cv::imencode(ext, mat, bytes))
      write(dir / (std::string("rgb") + ext), cat({1}, Bytes(bytes.begin(), bytes.end())));
  }
  cv::Mat deep(4, 4, CV_16UC4, cv::Scalar(1000, 20000, 65535, 5));
  std::vector<uchar> bytes;
  if (cv::imencode(".png", deep, bytes))
    write(dir / "rgba16.png", cat({3}, Bytes(bytes.begin(), bytes.end())));
}

// First byte: bit 0 = unpack the top folder "top" only (see entry_points.cpp).
// First byte: bit 0 RGB, bit 1 evaluation, the rest the side; second the seed.
void crop_seeds(const fs::path& dir) {
  cv::Mat mat(40, 56, CV_8UC3);
  cv::randu(mat, 0, 255);
  for (const char* ext : {".jpg", ".png", ".webp"}) {
    std::vector<uchar> bytes;
    if (!cv::imencode(ext, mat, bytes)) continue;
    write(dir / (std::string("crop") + ext),
          cat({1 | (16 << 2), 7}, Bytes(bytes.begin(), bytes.end())));
    write(dir / (std::string("eval") + ext),
          cat({3 | (12 << 2), 0}, Bytes(bytes.begin(), bytes.end())));
  }
  std::vector<uchar> progressive;
  if (cv::imencode(".jpg", mat, progressive, {cv::IMWRITE_JPEG_PROGRESSIVE, 1}))
    write(dir / "progressive.jpg",
          cat({1 | (20 << 2), 3}, Bytes(progressive.begin(), progressive.end())));
}

void archive_seeds(const fs::path& dir) {
  using vit::fuzz::ArchiveEntry;
  using vit::fuzz::ArchiveFormat;
  const std::vector<ArchiveEntry> entries = {
      {"top/", "", ArchiveEntry::Type::kFolder},
      {"top/a.bin", "alpha"},
      {"top/sub/b.txt", "beta"},
      {"top/link", "sub/b.txt", ArchiveEntry::Type::kSymlink},
      {"top/hard", "top/a.bin", ArchiveEntry::Type::kHardlink}};
  write(dir / "top.tar.gz", cat({1}, vit::fuzz::make_archive(ArchiveFormat::kTarGz, entries)));
  write(dir / "top.zip", cat({1}, vit::fuzz::make_archive(ArchiveFormat::kZip, entries)));
  write(dir / "plain.tar.gz",
        cat({0}, vit::fuzz::make_archive(ArchiveFormat::kTarGz, {{"x", std::string(300, 'x')}})));
}

// First byte: bit 0 = skip_corrupt, the rest (mod 16) = num_classes (see entry_points.cpp).
void webdataset_seeds(const fs::path& dir) {
  using vit::fuzz::ArchiveEntry;
  using vit::fuzz::ArchiveFormat;
  const auto rgb =
      torch::arange(3 * 4 * 4, torch::kInt).remainder(256).to(torch::kByte).reshape({3, 4, 4});
  const Bytes png_bytes = vit::io::encode_png(rgb);
  const std::string png(png_bytes.begin(), png_bytes.end());
  std::vector<uchar> jpg_bytes;
  cv::imencode(".jpg", cv::Mat(4, 4, CV_8UC3, cv::Scalar(10, 200, 30)), jpg_bytes);
  const std::string jpg(jpg_bytes.begin(), jpg_bytes.end());
  const uint8_t ten_classes = 10 << 1;
  write(dir / "valid.tar",
        cat({ten_classes},
            vit::fuzz::make_archive(ArchiveFormat::kTar, {{"n01/", "", ArchiveEntry::Type::kFolder},
                                                          {"n01/a.jpg", jpg},
                                                          {"n01/a.cls", "3\n"},
                                                          {"n01/a.json", "{\"w\": 4}"},
                                                          {"b.PNG", png},
                                                          {"b.cls", "7"}})));
  const std::vector<ArchiveEntry> bad = {{"a.png", png},
                                         {"a.cls", "1"},
                                         {"../b.png", png},
                                         {"../b.cls", "2"},
                                         {"c.jpg", "c.png", ArchiveEntry::Type::kSymlink},
                                         {"d.png", png},
                                         {"d.cls", "x"},
                                         {"e.jpg", jpg},
                                         {"e.cls", "4"}};
  write(dir / "bad_members_skipped.tar", cat({static_cast<uint8_t>(ten_classes | 1)},
                                             vit::fuzz::make_archive(ArchiveFormat::kTar, bad)));
  write(dir / "bad_members.tar", cat({0}, vit::fuzz::make_archive(ArchiveFormat::kTar, bad)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: make_seeds OUT_DIR CONFIGS_DIR\n";
    return 2;
  }
  const fs::path out = argv[1];
  idx_seeds(out / "idx");
  cifar_seeds(out / "cifar");
  tiny_imagenet_seeds(out / "tiny_imagenet");
  safetensors_seeds(out / "safetensors");
  checkpoint_seeds(out / "checkpoint");
  config_seeds(out / "config", argv[2]);
  config_dict(out / "config.dict");
  image_seeds(out / "image");
  crop_seeds(out / "crop");
  archive_seeds(out / "archive");
  webdataset_seeds(out / "webdataset");
  return 0;
}
