#include "vit/data/download/archive_unpack.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <system_error>
#include <vector>

#include "vit/atomic_write.hpp"
#include "vit/data/archive_path.hpp"
#include "vit/error.hpp"

namespace vit::data {

namespace fs = std::filesystem;

namespace {

struct Reader {
  archive* a = archive_read_new();
  ~Reader() { archive_read_free(a); }
};

std::string libarchive_says(archive* a) {
  const char* text = archive_error_string(a);
  return text ? text : "no message";
}

class Unpacker {
 public:
  Unpacker(const fs::path& archive, const fs::path& into, std::string top,
           const UnpackLimits& limits)
      : archive_(archive), into_(into), top_(std::move(top)), limits_(limits) {}

  void run() {
    Reader reader;
    archive* a = reader.a;
    // Only the formats and filters of dataset archives; never the ones that
    // run an external program.
    archive_read_support_format_tar(a);
    archive_read_support_format_zip(a);
    archive_read_support_filter_gzip(a);
    archive_read_support_filter_bzip2(a);
    archive_read_support_filter_xz(a);
    if (archive_read_open_filename(a, archive_.c_str(), 1 << 16) != ARCHIVE_OK) damaged(a);
    std::error_code ec;
    fs::create_directories(into_, ec);
    if (ec) throw Error("cannot create " + into_.string() + " (" + ec.message() + ")");
    uint64_t entries = 0;
    for (;;) {
      archive_entry* entry = nullptr;
      const int rc = archive_read_next_header(a, &entry);
      if (rc == ARCHIVE_EOF) break;
      if (rc < ARCHIVE_WARN) damaged(a);
      if (++entries > limits_.max_entries)
        refuse("", "more than " + std::to_string(limits_.max_entries) + " entries");
      unpack_entry(a, entry);
    }
  }

 private:
  [[noreturn]] void refuse(const std::string& entry, const std::string& why) const {
    throw Error(archive_.string() + ": " + (entry.empty() ? "" : "entry '" + entry + "': ") + why +
                "; refused");
  }

  [[noreturn]] void damaged(archive* a) const {
    throw Error(archive_.string() + ": damaged, truncated or not a tar or zip archive (" +
                libarchive_says(a) + ")");
  }

  // The entry's path below `into_`, or "" for the top folder itself.
  fs::path place_of(const std::string& name) const {
    if (name.empty()) refuse(name, "an entry without a name");
    if (const std::string escape = path_escape(name); !escape.empty()) refuse(name, escape);
    auto parts = archive_path_parts(name);
    if (!top_.empty()) {
      if (parts.empty() || parts.front() != top_)
        refuse(name, "outside the archive's top folder " + top_ + "/");
      parts.erase(parts.begin());
    }
    fs::path out;
    for (const auto& p : parts)
      out /= p;
    return out;
  }

  void unpack_entry(archive* a, archive_entry* entry) {
    const char* raw = archive_entry_pathname(entry);
    const std::string name = raw ? raw : "";
    const fs::path place = place_of(name);
    const fs::path target = into_ / place;
    const char* hardlink = archive_entry_hardlink(entry);
    const auto type = archive_entry_filetype(entry);
    if (place.empty()) {
      if (hardlink || type != AE_IFDIR) refuse(name, "the top folder is not a folder");
      return;
    }
    std::error_code ec;
    if (hardlink) {
      const fs::path source = into_ / place_of(hardlink);
      if (!fs::is_regular_file(fs::symlink_status(source, ec)))
        refuse(name, std::string("a hard link to ") + hardlink + ", not a file unpacked before it");
      make_room(name, target);
      fs::create_hard_link(source, target, ec);
      if (ec) refuse(name, "cannot link (" + ec.message() + ")");
      return;
    }
    switch (type) {
      case AE_IFDIR:
        fs::create_directories(target, ec);
        if (ec) refuse(name, "cannot create the folder (" + ec.message() + ")");
        return;
      case AE_IFLNK: {
        const char* link = archive_entry_symlink(entry);
        const std::string to = link ? link : "";
        if (to.empty() || !path_escape(to).empty())
          refuse(name, "a symbolic link to '" + to + "', which may lead outside the dataset");
        make_room(name, target);
        fs::create_symlink(to, target, ec);
        if (ec) refuse(name, "cannot link (" + ec.message() + ")");
        return;
      }
      case AE_IFREG:
        write_file(a, name, target);
        return;
      default:
        refuse(name, "not a file, folder or link");
    }
  }

  // Creates the entry's folder and removes an earlier entry of the same name.
  void make_room(const std::string& name, const fs::path& target) const {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) refuse(name, "cannot create its folder (" + ec.message() + ")");
    if (fs::is_directory(fs::symlink_status(target, ec)))
      refuse(name, "a file where the archive has a folder");
    fs::remove(target, ec);
  }

  void write_file(archive* a, const std::string& name, const fs::path& target) {
    make_room(name, target);
    CheckedFile out(target.string());
    std::vector<char> buffer(1 << 16);
    for (;;) {
      const la_ssize_t n = archive_read_data(a, buffer.data(), buffer.size());
      if (n == 0) break;
      if (n < 0) damaged(a);
      written_ += static_cast<uint64_t>(n);
      if (written_ > limits_.max_bytes)
        refuse(name, "the archive unpacks to more than " + std::to_string(limits_.max_bytes) +
                         " bytes, far more than the dataset");
      out.write(buffer.data(), static_cast<size_t>(n));
    }
    out.close();
  }

  fs::path archive_, into_;
  std::string top_;
  UnpackLimits limits_;
  uint64_t written_ = 0;
};

}  // namespace

// Link targets are refused when absolute or with a ".." part, so no chain of links
// can lead out of `into`.
void unpack_archive(const fs::path& archive, const fs::path& into, const std::string& top_folder,
                    const UnpackLimits& limits) {
  Unpacker(archive, into, top_folder, limits).run();
}

}  // namespace vit::data
