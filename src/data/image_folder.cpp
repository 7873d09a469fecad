#include "vit/data/image_folder.hpp"

#include <algorithm>
#include <map>

#include "vit/error.hpp"

namespace vit::data {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kImageExtensions = {".png", ".jpg", ".jpeg", ".bmp", ".webp"};

std::vector<std::string> subfolders(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && !name.empty() && name[0] != '.') names.push_back(name);
  }
  if (ec) throw Error(dir.string() + ": cannot list the folder (" + ec.message() + ")");
  std::sort(names.begin(), names.end());
  return names;
}

void add_split(const fs::path& dir, const std::map<std::string, int64_t>& label_of,
               std::vector<fs::path>& files, std::vector<int64_t>& labels) {
  for (const auto& name : subfolders(dir)) {
    const auto it = label_of.find(name);
    if (it == label_of.end()) {
      throw Error((dir / name).string() + ": class folder not found among the training classes");
    }
    for (auto& file : list_images(dir / name, kImageExtensions)) {
      files.push_back(std::move(file));
      labels.push_back(it->second);
    }
  }
}

}  // namespace

ImageListing list_image_folder(const fs::path& root, int64_t channels, int64_t side) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw Error(root.string() + ": folder not found (data.root)");
  const bool split_layout = fs::is_directory(root / "train", ec);
  const fs::path train_dir = split_layout ? root / "train" : root;
  ImageListing listing;
  listing.root = root;
  listing.name = "image-folder";
  listing.channels = channels;
  listing.side = side;
  listing.classes = subfolders(train_dir);
  if (listing.classes.size() < 2) {
    throw Error(train_dir.string() + ": " + std::to_string(listing.classes.size()) +
                " class folders, expected at least 2 (root/<class>/*.png|jpg|jpeg|bmp|webp)");
  }
  std::map<std::string, int64_t> label_of;
  for (size_t k = 0; k < listing.classes.size(); ++k)
    label_of[listing.classes[k]] = static_cast<int64_t>(k);
  add_split(train_dir, label_of, listing.train_files, listing.train_labels);
  if (listing.train_files.empty()) {
    throw Error(train_dir.string() +
                ": no .png, .jpg, .jpeg, .bmp or .webp images in the class folders");
  }
  if (split_layout) {
    for (const char* name : {"test", "val"}) {
      if (fs::is_directory(root / name, ec)) {
        add_split(root / name, label_of, listing.test_files, listing.test_labels);
        break;
      }
    }
  }
  return listing;
}

DatasetPair load_image_folder(const fs::path& root, int64_t channels, int64_t side,
                              const ImageLoadOptions& options) {
  return load_listing(list_image_folder(root, channels, side), options);
}

}  // namespace vit::data
