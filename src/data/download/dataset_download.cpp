// The unpacked archive is untrusted (archive_unpack.hpp) and limited to
// kUnpackFactor times the dataset's size. An incomplete data.root is refused
// because its files are the user's. Concurrent calls take turns through a lock file
// in the download folder.
#include "vit/data/download/dataset_download.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <system_error>
#include <vector>

#include <spdlog/spdlog.h>

#include "vit/atomic_write.hpp"
#include "vit/data/download/archive_unpack.hpp"
#include "vit/data/download/checksum.hpp"
#include "vit/data/download/dataset_archives.hpp"
#include "vit/data/download/download.hpp"
#include "vit/data/download/file_lock.hpp"
#include "vit/error.hpp"

namespace vit::data {

namespace fs = std::filesystem;

namespace {

constexpr size_t kSha256Digits = 64;

// One file to fetch, and the sum it must have ("" = none: data.url without data.sha256).
struct Planned {
  std::string name;
  std::string url;
  std::string sum;
  DigestKind kind;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    out.push_back(item);
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<Planned> plan(const DataConfig& d, const DatasetArchive& a) {
  std::vector<Planned> files;
  if (d.url.empty()) {
    for (const auto& f : a.files)
      files.push_back({f.name, a.base_url + f.name, f.md5, DigestKind::kMd5});
    return files;
  }
  const auto sums = split_commas(d.sha256);
  if (!sums.empty() && sums.size() != a.files.size()) {
    throw Error("data.sha256 holds " + std::to_string(sums.size()) + " checksum(s), expected " +
                std::to_string(a.files.size()) + " (one per file that " + enum_name(d.dataset) +
                " downloads from data.url)");
  }
  for (const auto& s : sums) {
    if (s.size() != kSha256Digits)
      throw Error("data.sha256: '" + s + "' is not a SHA-256 (64 hexadecimal digits)");
  }
  const bool folder = a.layout == ArchiveLayout::kGzFiles;
  const std::string base = d.url.back() == '/' ? d.url : d.url + "/";
  for (size_t i = 0; i < a.files.size(); ++i) {
    files.push_back({a.files[i].name, folder ? base + a.files[i].name : d.url,
                     sums.empty() ? "" : lower(sums[i]), DigestKind::kSha256});
  }
  return files;
}

void create_folder(const fs::path& folder, const fs::path& root) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) {
    throw Error("cannot download into data.root " + root.string() + ": cannot create " +
                folder.string() + " (" + ec.message() + ")");
  }
}

// Fetches one file into the download folder and checks its sum; returns the
// verified file.
fs::path fetch_verified(const Planned& f, const fs::path& staging) {
  const fs::path verified = staging / f.name;
  const fs::path part = staging / (f.name + ".part");
  std::error_code ec;
  if (fs::exists(verified, ec)) {
    if (f.sum.empty() || file_digest(verified, f.kind) == f.sum) return verified;
    fs::remove(verified, ec);
  }
  spdlog::info("downloading {}", f.url);
  fetch_url(f.url, part, f.name);
  const std::string sum = file_digest(part, f.kind);
  if (f.sum.empty()) {
    spdlog::warn(
        "{} from {} was not verified: its SHA-256 is {} (give it as data.sha256 to check it)",
        f.name, f.url, sum);
  } else if (sum != f.sum) {
    fs::remove(part, ec);
    throw Error(f.name + " from " + f.url + " is damaged: its " + digest_name(f.kind) + " is " +
                sum + ", expected " + f.sum +
                " (the file is deleted; the next run downloads it "
                "anew)");
  }
  move_into_place(part.string(), verified.string());
  return verified;
}

// Whether the download folder holds anything worth keeping for the next run.
bool holds_downloads(const fs::path& staging) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(staging, ec)) {
    const auto name = entry.path().filename().string();
    if (name != "lock" && entry.is_regular_file(ec) && entry.file_size(ec) > 0) return true;
  }
  return false;
}

void unpack_into(const fs::path& folder, const DatasetArchive& a,
                 const std::vector<fs::path>& files) {
  if (a.layout == ArchiveLayout::kGzFiles) {
    std::error_code ec;
    fs::create_directories(folder, ec);
    for (const auto& f : files) {
      if (!ec) fs::create_hard_link(f, folder / f.filename(), ec);
    }
    if (ec)
      throw Error("cannot link the downloads into " + folder.string() + " (" + ec.message() + ")");
    return;
  }
  unpack_archive(files.front(), folder, a.top_folder,
                 UnpackLimits{a.dataset_bytes * kUnpackFactor});
}

}  // namespace

bool download_dataset(const DataConfig& d) {
  fs::path root = fs::path(d.root).lexically_normal();
  if (root.filename().empty()) root = root.parent_path();  // "data/x/"
  const std::string dataset = enum_name(d.dataset);
  std::string missing = missing_file(d.dataset, root);
  if (missing.empty()) {
    spdlog::info("{} holds {} already: nothing to download", root.string(), dataset);
    return false;
  }
  const auto archive = official_archive(d.dataset);
  if (!archive) {
    throw Error("data.dataset " + dataset + " has no archive to download: put the images in " +
                root.string() + " yourself");
  }
  std::error_code ec;
  if (fs::exists(root, ec) && !(fs::is_directory(root, ec) && fs::is_empty(root, ec))) {
    throw Error("data.root " + root.string() + " exists but lacks " + missing +
                ", so it is not a "
                "complete " +
                dataset +
                "; vit downloads only into a missing or empty folder: "
                "move it away first");
  }
  const auto files = plan(d, *archive);
  const fs::path parent = root.has_parent_path() ? root.parent_path() : fs::path(".");
  const fs::path staging = parent / (".vit-download-" + root.filename().string());
  create_folder(staging, root);
  const FileLock lock(staging / "lock");
  if (missing_file(d.dataset, root).empty()) return false;  // another vit just finished
  const fs::path unpacked = staging / ("unpacked." + std::to_string(::getpid()));
  const bool verified = !files.front().sum.empty();
  std::vector<fs::path> downloaded;
  try {
    for (const auto& f : files)
      downloaded.push_back(fetch_verified(f, staging));
    spdlog::info("unpacking into {}", root.string());
    fs::remove_all(unpacked, ec);
    try {
      unpack_into(unpacked, *archive, downloaded);
      missing = missing_file(d.dataset, unpacked);
      if (!missing.empty()) {
        throw Error(files.front().url + " does not hold " + dataset +
                    " as vit reads it: " + missing + " is missing after unpacking" +
                    (archive->top_folder.empty()
                         ? ""
                         : " (expected in " + archive->top_folder + "/ of the archive)"));
      }
    } catch (...) {
      // An unverified archive that does not unpack is no use to the next run.
      if (!verified)
        for (const auto& f : downloaded)
          fs::remove(f, ec);
      throw;
    }
    move_into_place(unpacked.string(), root.string());
  } catch (...) {
    fs::remove_all(unpacked, ec);
    if (!holds_downloads(staging)) fs::remove_all(staging, ec);
    throw;
  }
  fs::remove_all(staging, ec);
  spdlog::info("{} now holds {}", root.string(), dataset);
  return true;
}

}  // namespace vit::data
