#include "vit/data/tiny_imagenet.hpp"

#include <fstream>
#include <map>
#include <sstream>

#include "vit/data/folder_listing.hpp"
#include "vit/error.hpp"

namespace vit::data {
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kJpegExtensions = {".jpeg", ".jpg"};

std::string trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

std::ifstream open_text(const fs::path& file, const std::string& what) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw Error(file.string() + ": file not found (" + what + ")");
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot open for reading");
  return in;
}

std::vector<std::string> read_wnids(const fs::path& file) {
  auto in = open_text(file, "Tiny-ImageNet lists its class ids in wnids.txt");
  std::vector<std::string> wnids;
  std::map<std::string, int> seen;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string wnid = trim(line);
    if (wnid.empty()) continue;
    if (seen.count(wnid)) {
      throw Error(file.string() + " line " + std::to_string(number) + ": " + wnid +
                  " repeats line " + std::to_string(seen[wnid]));
    }
    seen[wnid] = number;
    wnids.push_back(wnid);
  }
  if (wnids.empty()) throw Error(file.string() + ": no class ids");
  return wnids;
}

// wnid -> first name in words.txt; the wnid itself when the file or entry is absent.
std::vector<std::string> class_names(const fs::path& file, const std::vector<std::string>& wnids) {
  std::map<std::string, std::string> names;
  std::error_code ec;
  if (fs::is_regular_file(file, ec)) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
      const auto tab = line.find('\t');
      if (tab == std::string::npos) continue;
      const std::string all = line.substr(tab + 1);
      names[trim(line.substr(0, tab))] = trim(all.substr(0, all.find(',')));
    }
  }
  std::vector<std::string> out;
  for (const auto& wnid : wnids) {
    const auto it = names.find(wnid);
    out.push_back(it != names.end() && !it->second.empty() ? it->second : wnid);
  }
  return out;
}

}  // namespace

ImageListing list_tiny_imagenet(const fs::path& root) {
  ImageListing listing;
  listing.root = root;
  listing.name = "tiny-imagenet-200";
  const fs::path wnids_file = root / "wnids.txt";
  const auto wnids = read_wnids(wnids_file);
  listing.classes = class_names(root / "words.txt", wnids);
  std::map<std::string, int64_t> label_of;
  for (size_t k = 0; k < wnids.size(); ++k)
    label_of[wnids[k]] = static_cast<int64_t>(k);

  std::vector<LabelledFolder> folders;
  for (size_t k = 0; k < wnids.size(); ++k) {
    const fs::path dir = root / "train" / wnids[k] / "images";
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      throw Error(dir.string() + ": folder not found (class " + wnids[k] +
                  " is listed in wnids.txt)");
    }
    folders.push_back({dir, static_cast<int64_t>(k)});
  }
  const auto n_classes = static_cast<int64_t>(wnids.size());
  listing.train = list_labelled_folders(folders, kJpegExtensions, n_classes);
  listing.evaluation = FileList(n_classes);

  const fs::path annotations = root / "val" / "val_annotations.txt";
  auto in = open_text(annotations, "it labels the images of val/images");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (trim(line).empty()) continue;
    std::istringstream fields(line);
    std::string file, wnid;
    if (!std::getline(fields, file, '\t') || !std::getline(fields, wnid, '\t') ||
        trim(file).empty()) {
      throw Error(annotations.string() + " line " + std::to_string(number) +
                  ": expected <file> TAB <wnid> TAB <box>, got \"" + line + "\"");
    }
    const auto it = label_of.find(trim(wnid));
    if (it == label_of.end()) {
      throw Error(annotations.string() + " line " + std::to_string(number) + ": class " +
                  trim(wnid) + " is not in wnids.txt");
    }
    listing.evaluation.add(root / "val" / "images", trim(file), it->second);
  }
  listing.index_files = {wnids_file, annotations};
  if (fs::exists(root / "words.txt")) listing.index_files.push_back(root / "words.txt");
  listing.channels = 3;
  listing.side = 64;
  return listing;
}

DatasetPair load_tiny_imagenet(const fs::path& root, const ImageLoadOptions& options) {
  return load_listing(list_tiny_imagenet(root), options);
}

}  // namespace vit::data
