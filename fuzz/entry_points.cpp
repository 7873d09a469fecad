#include "entry_points.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "deflated.hpp"
#include "vit/config.hpp"
#include "vit/data/cifar.hpp"
#include "vit/data/download/archive_unpack.hpp"
#include "vit/data/idx.hpp"
#include "vit/data/image_transform.hpp"
#include "vit/data/tiny_imagenet.hpp"
#include "vit/data/webdataset.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"
#include "vit/io/planned_decode.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit/weights/safetensors.hpp"
#include "vit/weights/timm_layout.hpp"

namespace vit::fuzz {
namespace {

namespace fs = std::filesystem;

// A folder of this process's own for the files the readers take by path,
// removed when the process exits.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("vit-fuzz-" + std::to_string(::getpid()));
  ScratchDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

const fs::path& scratch() {
  static const ScratchDir dir;
  return dir.path;
}

fs::path write_file(const fs::path& path, const uint8_t* data, size_t size) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw Error(path.string() + ": fuzz harness cannot write its input");
  return path;
}

fs::path write_file(const fs::path& path, const std::string& text) {
  return write_file(path, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

// First byte: bit 0 = images/labels, bit 1 = gzip the rest first. The rest is
// the file (which may itself be a gzip stream: zlib reads both).
void run_idx(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const uint8_t mode = data[0];
  std::vector<uint8_t> bytes(data + 1, data + size);
  if (mode & 2)  // gzipped, so the fuzzer reaches the IDX checks through zlib too
    bytes = deflated(bytes.data(), bytes.size(), DeflateWrapper::kGzip, Z_BEST_SPEED);
  const fs::path file =
      write_file(scratch() / (mode & 2 ? "idx.gz" : "idx"), bytes.data(), bytes.size());
  if (mode & 1)
    data::read_idx_labels(file);
  else
    data::read_idx_images(file);
}

// First byte: bit 0 = CIFAR-100. The rest is the batch file.
void run_cifar(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const auto kind = (data[0] & 1) ? data::CifarKind::kCifar100 : data::CifarKind::kCifar10;
  const fs::path file = write_file(scratch() / "batch.bin", data + 1, size - 1);
  data::read_cifar_file(file, kind, {});
}

// wnids.txt, a line "----", then val/val_annotations.txt. The harness makes
// the train/<wnid>/images folder of every plainly named wnid (at most 64), so
// that the listing gets as far as the annotations.
void run_tiny_imagenet(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto split = text.find("\n----\n");
  const std::string wnids = text.substr(0, split);
  const std::string annotations = split == std::string::npos ? "" : text.substr(split + 6);
  const fs::path root = scratch() / "tiny";
  fs::remove_all(root);
  write_file(root / "wnids.txt", wnids);
  write_file(root / "val" / "val_annotations.txt", annotations);
  static const std::regex plain("[A-Za-z0-9_]{1,32}");
  std::istringstream lines(wnids);
  std::string line;
  for (int made = 0; std::getline(lines, line) && made < 64;) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t'))
      line.pop_back();
    if (std::regex_match(line, plain)) {
      fs::create_directories(root / "train" / line / "images");
      ++made;
    }
  }
  data::list_tiny_imagenet(root);
}

// The bytes as a .safetensors file, read from memory and from disk, then the
// metadata as `vit` reads it (our config and class names).
void run_safetensors(const uint8_t* data, size_t size) {
  parse_safetensors(data, size, "fuzz.safetensors");
  const fs::path file = write_file(scratch() / "weights.safetensors", data, size);
  const SafetensorsContents contents = read_safetensors(file.string());
  if (const auto config = config_from_metadata(contents.metadata, file.string()))
    class_names_from_metadata(contents.metadata, config->model.num_classes, file.string());
}

// The bytes as a .pt checkpoint, loaded as every command loads one.
void run_checkpoint(const uint8_t* data, size_t size) {
  const fs::path file = write_file(scratch() / "model.pt", data, size);
  load_model(file.string());
}

// A JSON config, then one `--set KEY=VALUE` per line after a line "----".
// A config that loads must also survive the round trip through its own JSON.
void run_config(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto split = text.find("\n----\n");
  Config config = parse_config_string(text.substr(0, split), "fuzz.json");
  if (split != std::string::npos) {
    std::istringstream lines(text.substr(split + 6));
    std::string line;
    while (std::getline(lines, line))
      apply_override(config, line);
  }
  config.validate();
  const Config again = parse_config_string(config_to_json_string(config), "round trip");
  again.validate();
  if (config_to_json_string(again) != config_to_json_string(config))
    throw std::logic_error("config changed in a JSON round trip");  // a bug, not a bad input
}

// First byte: bit 0 = gray or RGB, the rest (mod 65) the side (0 = keep). The
// rest is an encoded image, decoded as --images files are.
void run_image(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const int64_t channels = (data[0] & 1) ? 3 : 1;
  const int64_t side = (data[0] >> 1) % 65;
  io::decode_image(data + 1, size - 1, channels, side, "fuzz image");
}

// First byte: bit 0 = gray or RGB, bit 1 = the evaluation transform or a
// random resized crop, the rest (mod 60) + 4 the side; second byte: bits 0-1
// the resize (area, Pillow's bilinear, bicubic, area), the rest the crop's
// seed. The rest is an encoded image, decoded as the streamed pipeline does
// (JPEG header, partial libjpeg decode, OpenCV for the others).
void run_crop(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const int64_t channels = (data[0] & 1) ? 3 : 1;
  const bool evaluation = (data[0] & 2) != 0;
  const int64_t side = 4 + (data[0] >> 2) % 60;
  const Interpolation interpolation = (data[1] & 3) == 1   ? Interpolation::kBilinear
                                      : (data[1] & 3) == 2 ? Interpolation::kBicubic
                                                           : Interpolation::kArea;
  data::Rng rng(data[1] >> 2);
  const RandomResizedCrop crop;
  io::decode_planned(
      data + 2, size - 2, channels,
      [&](int64_t h, int64_t w) {
        auto plan = evaluation ? data::center_crop_plan(h, w, side, 0.875)
                               : data::random_resized_crop_plan(h, w, side, crop, rng);
        plan.interpolation = interpolation;
        return plan;
      },
      "fuzz crop");
}

// First byte: bit 0 = keep only the top folder "top". The rest is an archive
// (tar, tar.gz, zip), unpacked into a fresh folder under a 1 MB, 1000-entry cap.
void run_archive(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const fs::path file = write_file(scratch() / "archive.bin", data + 1, size - 1);
  const fs::path into = scratch() / "unpacked";
  fs::remove_all(into);
  data::unpack_archive(file, into, (data[0] & 1) ? "top" : "", {1 << 20, 1000});
}

// First byte: bit 0 = skip_corrupt, the rest (mod 16) = num_classes (0 = unchecked).
// The rest is a WebDataset shard, read sample by sample under a 64 KB member
// cap, then counted: both must succeed or both fail, and agree.
void run_webdataset(const uint8_t* data, size_t size) {
  if (size == 0) return;
  data::ShardOptions options;
  options.max_member_bytes = 64 << 10;
  options.num_classes = (data[0] >> 1) % 16;
  options.skip_corrupt = (data[0] & 1) != 0;
  const fs::path file = write_file(scratch() / "shard.tar", data + 1, size - 1);
  int64_t read = 0;
  std::string read_error;
  try {
    data::ShardReader reader(file, options);
    while (const auto sample = reader.next()) {
      if (sample->image.empty() || sample->label < 0)
        throw std::logic_error("a sample let through");
      ++read;
    }
  } catch (const Error& e) {
    read_error = e.what();
  }
  int64_t counted = -1;
  std::string count_error;
  try {
    counted = data::count_shard_samples(file, options);
  } catch (const Error& e) {
    count_error = e.what();
  }
  // Where one succeeds and the other fails, or they disagree: a bug, not a bad input.
  if (read_error.empty() != count_error.empty())
    throw std::logic_error("reading says '" + read_error + "', counting says '" + count_error +
                           "'");
  if (!read_error.empty()) throw Error(read_error);
  if (counted != read)
    throw std::logic_error("count_shard_samples " + std::to_string(counted) +
                           " != " + std::to_string(read) + " samples read");
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"idx", run_idx, "MNIST IDX images/labels, plain and gzipped (data/idx)"},
      {"cifar", run_cifar, "a CIFAR-10/100 binary batch (data/cifar)"},
      {"tiny_imagenet", run_tiny_imagenet,
       "Tiny-ImageNet wnids.txt and val_annotations.txt (data/tiny_imagenet)"},
      {"safetensors", run_safetensors,
       "safetensors header, offsets and our __metadata__ (weights/safetensors, weights/weights)"},
      {"checkpoint", run_checkpoint, "a .pt checkpoint through load_model (weights/checkpoint)"},
      {"config", run_config, "a JSON config and --set overrides (config)"},
      {"image", run_image, "an encoded image through io::decode_image (io/image_io)"},
      {"crop", run_crop,
       "an encoded image cropped as the streamed pipeline decodes it (io/planned_decode, "
       "io/jpeg_header)"},
      {"archive", run_archive,
       "a downloaded dataset archive, tar.gz or zip, unpacked (data/archive_unpack)"},
      {"webdataset", run_webdataset,
       "a WebDataset shard (tar), read and counted (data/webdataset)"},
  };
  return all;
}

EntryPoint entry_point(const std::string& name) {
  for (const auto& t : targets()) {
    if (name == t.name) return t.run;
  }
  throw Error("fuzz: unknown target '" + name + "'");
}

}  // namespace vit::fuzz
