#include "vit/data/image_folder.hpp"

#include <algorithm>
#include <map>

#include "vit/data/folder_listing.hpp"
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

// The images of `dir`'s class folders, each labelled by its folder's place
// among the training classes.
FileList list_split(const fs::path& dir, const std::map<std::string, int64_t>& label_of) {
  std::vector<LabelledFolder> folders;
  for (const auto& name : subfolders(dir)) {
    const auto it = label_of.find(name);
    if (it == label_of.end()) {
      throw Error((dir / name).string() + ": class folder not found among the training classes");
    }
    folders.push_back({dir / name, it->second});
  }
  return list_labelled_folders(folders, kImageExtensions, static_cast<int64_t>(label_of.size()));
}

}  // namespace

ImageListing list_image_folder(const fs::path& root, int64_t channels, int64_t side,
                               bool val_folder) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    // Not there, or there but out of reach: a path past PATH_MAX, a folder vit may not read.
    const bool missing = !ec || ec == std::errc::no_such_file_or_directory;
    throw Error(
        root.string() +
        (missing ? ": folder not found" : ": cannot open the folder (" + ec.message() + ")") +
        " (data.root)");
  }
  const bool split_layout = fs::is_directory(root / "train", ec);
  const fs::path train_dir = split_layout ? root / "train" : root;
  if (val_folder && !(split_layout && fs::is_directory(root / "val", ec)))
    throw Error(root.string() +
                ": no train/ and val/ folders, which data.validation \"folder\" reads");
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
  listing.train = list_split(train_dir, label_of);
  if (listing.train.empty()) {
    throw Error(train_dir.string() +
                ": no .png, .jpg, .jpeg, .bmp or .webp images in the class folders");
  }
  if (val_folder) {
    listing.evaluation = list_split(root / "val", label_of);
  } else if (split_layout) {
    for (const char* name : {"test", "val"}) {
      if (fs::is_directory(root / name, ec)) {
        listing.evaluation = list_split(root / name, label_of);
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
