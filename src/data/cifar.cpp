#include "vit/data/cifar.hpp"

#include <fstream>

#include <torch/torch.h>

#include "vit/data/file_bytes.hpp"
#include "vit/error.hpp"

namespace vit::data {
namespace fs = std::filesystem;

namespace {

constexpr int64_t kSide = 32;
constexpr int64_t kPixelBytes = 3 * kSide * kSide;

struct Layout {
  const char* name;
  int64_t label_bytes;
  int64_t label_offset;  // the byte used as the label inside the record
  int64_t num_classes;
  const char* names_file;
};

Layout layout_of(CifarKind kind) {
  if (kind == CifarKind::kCifar10) return {"CIFAR-10", 1, 0, 10, "batches.meta.txt"};
  return {"CIFAR-100", 2, 1, 100, "fine_label_names.txt"};
}

const std::vector<std::string>& official_names(CifarKind kind) {
  static const std::vector<std::string> cifar10 = {
      "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  static const std::vector<std::string> cifar100 = {
      "apple",       "aquarium_fish", "baby",      "bear",       "beaver",       "bed",
      "bee",         "beetle",        "bicycle",   "bottle",     "bowl",         "boy",
      "bridge",      "bus",           "butterfly", "camel",      "can",          "castle",
      "caterpillar", "cattle",        "chair",     "chimpanzee", "clock",        "cloud",
      "cockroach",   "couch",         "crab",      "crocodile",  "cup",          "dinosaur",
      "dolphin",     "elephant",      "flatfish",  "forest",     "fox",          "girl",
      "hamster",     "house",         "kangaroo",  "keyboard",   "lamp",         "lawn_mower",
      "leopard",     "lion",          "lizard",    "lobster",    "man",          "maple_tree",
      "motorcycle",  "mountain",      "mouse",     "mushroom",   "oak_tree",     "orange",
      "orchid",      "otter",         "palm_tree", "pear",       "pickup_truck", "pine_tree",
      "plain",       "plate",         "poppy",     "porcupine",  "possum",       "rabbit",
      "raccoon",     "ray",           "road",      "rocket",     "rose",         "sea",
      "seal",        "shark",         "shrew",     "skunk",      "skyscraper",   "snail",
      "snake",       "spider",        "squirrel",  "streetcar",  "sunflower",    "sweet_pepper",
      "table",       "tank",          "telephone", "television", "tiger",        "tractor",
      "train",       "trout",         "tulip",     "turtle",     "wardrobe",     "whale",
      "willow_tree", "wolf",          "woman",     "worm"};
  return kind == CifarKind::kCifar10 ? cifar10 : cifar100;
}

std::vector<fs::path> train_files(const fs::path& root, CifarKind kind) {
  if (kind == CifarKind::kCifar100) return {root / "train.bin"};
  std::vector<fs::path> files;
  for (int i = 1; i <= 5; ++i)
    files.push_back(root / ("data_batch_" + std::to_string(i) + ".bin"));
  return files;
}

fs::path test_file(const fs::path& root, CifarKind kind) {
  return root / (kind == CifarKind::kCifar10 ? "test_batch.bin" : "test.bin");
}

}  // namespace

Dataset read_cifar_file(const fs::path& file, CifarKind kind,
                        const std::vector<std::string>& classes) {
  const Layout layout = layout_of(kind);
  const int64_t record = layout.label_bytes + kPixelBytes;
  std::vector<uint8_t> bytes = read_file_bytes(file);
  const auto size = static_cast<int64_t>(bytes.size());
  const std::string where = file.filename().string();
  if (size == 0 || size % record != 0) {
    throw Error(where + ": size " + std::to_string(size) + " is not a" +
                (size == 0 ? " positive" : "") + " multiple of " + std::to_string(record) + " (" +
                layout.name + " record = " + std::to_string(layout.label_bytes) + " label byte" +
                (layout.label_bytes > 1 ? "s" : "") + " + 3072 pixel bytes)");
  }
  const int64_t n = size / record;
  const auto records = torch::from_blob(bytes.data(), {n, record}, torch::kUInt8);  // (N, record)
  Dataset out;
  out.labels = records.select(1, layout.label_offset).to(torch::kInt64);
  if (kind == CifarKind::kCifar100)
    class_counts(records.select(1, 0).to(torch::kInt64), 20, where + " (coarse)");
  class_counts(out.labels, layout.num_classes, where);
  out.images =
      records.slice(1, layout.label_bytes).reshape({n, 3, kSide, kSide}).clone();  // (N, C, H, W)
  out.classes = classes;
  out.source = file.string();
  return out;
}

std::vector<std::string> cifar_class_names(const fs::path& root, CifarKind kind) {
  const Layout layout = layout_of(kind);
  const fs::path file = root / layout.names_file;
  std::error_code ec;
  if (!fs::exists(file, ec)) return official_names(kind);
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot open for reading");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
      line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  if (static_cast<int64_t>(names.size()) != layout.num_classes) {
    throw Error(file.string() + ": " + std::to_string(names.size()) + " class names, expected " +
                std::to_string(layout.num_classes) + " (" + layout.name + ")");
  }
  return names;
}

DatasetPair load_cifar(const fs::path& root, CifarKind kind) {
  const std::string name = layout_of(kind).name;
  auto files = train_files(root, kind);
  files.push_back(test_file(root, kind));
  for (const auto& file : files) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      throw Error(file.string() + ": file not found (the " + name + " binary version has " +
                  (kind == CifarKind::kCifar10
                       ? "data_batch_1.bin .. data_batch_5.bin and test_batch.bin"
                       : "train.bin and test.bin") +
                  " in data.root)");
    }
  }
  const auto classes = cifar_class_names(root, kind);
  std::vector<Dataset> parts;
  for (size_t i = 0; i + 1 < files.size(); ++i)
    parts.push_back(read_cifar_file(files[i], kind, classes));
  DatasetPair pair;
  pair.train = parts.size() == 1 ? std::move(parts.front())
                                 : concat(parts, root.string() + " (" + name + " train)");
  pair.test = read_cifar_file(files.back(), kind, classes);
  return pair;
}

}  // namespace vit::data
