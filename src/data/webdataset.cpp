#include "vit/data/webdataset.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <memory>
#include <optional>
#include <system_error>
#include <unordered_set>
#include <utility>

#include <ATen/ATen.h>

#include "vit/atomic_write.hpp"
#include "vit/data/archive_path.hpp"
#include "vit/data/file_bytes.hpp"
#include "vit/error.hpp"
#include "vit/io/image_io.hpp"

namespace vit::data {

namespace fs = std::filesystem;

namespace {

// A shard is read in blocks of this size: large sequential reads suit the
// network and object-store file systems that shards usually live on.
constexpr size_t kShardReadBlock = 1 << 20;

std::string shard_lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool is_shard_image(const std::string& ext) {
  return ext == "jpg" || ext == "jpeg" || ext == "png" || ext == "webp";
}

// "n01/n01_10026.JPEG" -> key "n01/n01_10026", ext "jpeg". False when the
// file name has no dot or starts with one (".DS_Store"), as webdataset's
// own split: such a member belongs to no sample.
bool split_member_name(const std::string& name, std::string& key, std::string& ext) {
  const auto slash = name.rfind('/');
  const size_t file_start = slash == std::string::npos ? 0 : slash + 1;
  const auto dot = name.find('.', file_start);
  if (dot == std::string::npos || dot == file_start) return false;
  key = name.substr(0, dot);
  ext = shard_lower(name.substr(dot + 1));
  return true;
}

// A .cls's text for an error message: one short line of printable characters.
std::string cls_preview(const std::vector<uint8_t>& bytes) {
  constexpr size_t kShown = 32;
  std::string text;
  for (size_t i = 0; i < bytes.size() && i < kShown; ++i)
    text += std::isprint(bytes[i]) ? static_cast<char>(bytes[i]) : '?';
  return bytes.size() > kShown ? text + "..." : text;
}

}  // namespace

// Named, not anonymous: ShardReader::Archive holds a ShardScan.
namespace shard_scan {

// One member's header, as the grouping into samples sees it.
struct ShardMember {
  std::string name;  // the path stored in the tar
  std::string key;   // the sample it belongs to (its name, when faulty and without a dot)
  std::string ext;   // lower-cased
  int64_t size = 0;
  std::string fault;  // what makes the member unacceptable, or ""
};

// The members of one sample as they are read.
struct ShardGathered {
  std::string key;
  std::string image_ext;
  std::vector<uint8_t> image;
  bool has_cls = false;
  std::vector<uint8_t> cls;
  std::string fault;  // the sample's first fault, "member '...': ..." or "sample '...': ..."
};

// The grouping of a shard's members into samples, shared by the reader
// (read_images) and the counter (images skipped, not read).
class ShardScan {
 public:
  ShardScan(fs::path shard, const ShardOptions& options, bool read_images)
      : shard_(std::move(shard)), options_(options), read_images_(read_images) {
    std::error_code ec;
    if (!fs::is_regular_file(shard_, ec))
      throw Error(shard_.string() + ": missing or not a file, expected a WebDataset shard (.tar)");
    if (!a_) throw Error(shard_.string() + ": libarchive cannot allocate a reader");
    // A shard is a plain tar: no other format, and no filter (a .tar.gz is
    // refused as not a tar rather than inflated without a bound).
    archive_read_support_format_tar(a_.get());
    if (archive_read_open_filename(a_.get(), shard_.c_str(), kShardReadBlock) != ARCHIVE_OK)
      damaged();
  }

  std::optional<ShardSample> next() {
    if (!fatal_.empty()) throw Error(fatal_);
    for (;;) {
      std::optional<ShardMember> first = next_member();
      if (!first) {
        if (returned_ > 0) return std::nullopt;
        fail(shard_.string() + ": no samples" +
             (skipped_ > 0 ? " (" + std::to_string(skipped_) + " faulty ones skipped)" : "") +
             ", expected at least one (an image and a .cls sharing a key)");
      }
      ShardGathered sample;
      sample.key = first->key;
      if (keys_seen_.count(sample.key) != 0)
        sample.fault = "sample '" + sample.key + "': its members come again after sample '" +
                       last_key_ + "', expected a sample's members side by side";
      take(*first, sample);
      while (std::optional<ShardMember> member = next_member()) {
        if (member->key != sample.key) {
          pending_ = std::move(member);
          break;
        }
        take(*member, sample);
      }
      keys_seen_.insert(sample.key);
      last_key_ = sample.key;
      ShardSample out;
      if (sample.fault.empty()) sample.fault = finish(sample, out);
      if (sample.fault.empty()) {
        ++returned_;
        return out;
      }
      if (!options_.skip_corrupt) fail(shard_.string() + ": " + sample.fault);
      spdlog::warn("{}: {}; sample skipped", shard_.string(), sample.fault);
      ++skipped_;
    }
  }

 private:
  using ReaderHandle = std::unique_ptr<archive, int (*)(archive*)>;

  // A fault ends the reader: libarchive's state after one is not to be trusted.
  [[noreturn]] void fail(const std::string& message) {
    fatal_ = message;
    throw Error(message);
  }

  // `in_data`: in the last member's bytes, else in the header after them.
  [[noreturn]] void damaged(bool in_data = false) {
    const char* says = archive_error_string(a_.get());
    fail(shard_.string() + ": damaged, truncated or not a tar file (" +
         (says ? says : "no message") + ")" +
         (last_member_.empty()
              ? ""
              : (in_data ? " in member '" : " after member '") + last_member_ + "'"));
  }

  // The next member that belongs to a sample (the one read ahead first), or
  // nullopt at the end. Folders and names without an extension are passed over.
  std::optional<ShardMember> next_member() {
    if (pending_) return std::exchange(pending_, std::nullopt);
    if (at_end_) return std::nullopt;
    for (;;) {
      archive_entry* entry = nullptr;
      const int rc = archive_read_next_header(a_.get(), &entry);
      if (rc == ARCHIVE_EOF) {
        at_end_ = true;
        return std::nullopt;
      }
      if (rc < ARCHIVE_WARN) damaged();
      ShardMember member;
      const char* name = archive_entry_pathname(entry);
      member.name = name ? name : "";
      last_member_ = member.name;
      const bool split = split_member_name(member.name, member.key, member.ext);
      if (!split) member.key = member.name;
      member.size = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0;
      const auto type = archive_entry_filetype(entry);
      const std::string escape = path_escape(member.name);
      if (member.name.empty()) {
        member.fault = "a member without a name";
      } else if (!escape.empty()) {
        member.fault = escape + ", expected a path inside the shard";
      } else if (archive_entry_hardlink(entry) != nullptr) {
        member.fault = std::string("a hard link to '") + archive_entry_hardlink(entry) +
                       "', expected a regular file or a folder";
      } else if (type == AE_IFLNK) {
        const char* to = archive_entry_symlink(entry);
        member.fault = std::string("a symbolic link to '") + (to ? to : "") +
                       "', expected a regular file or a folder";
      } else if (type == AE_IFDIR) {
        continue;
      } else if (type != AE_IFREG) {
        member.fault = "a device, FIFO or socket, expected a regular file or a folder";
      } else if (member.size < 0 || member.size > options_.max_member_bytes) {
        member.fault = std::to_string(member.size) + " bytes, more than the limit of " +
                       std::to_string(options_.max_member_bytes);
      } else if (!split) {
        continue;
      }
      return member;
    }
  }

  void take(const ShardMember& member, ShardGathered& sample) {
    if (sample.fault.empty() && !member.fault.empty())
      sample.fault = "member '" + member.name + "': " + member.fault;
    if (!sample.fault.empty()) return skip_data();
    if (is_shard_image(member.ext)) {
      if (!sample.image_ext.empty()) {
        sample.fault = "sample '" + sample.key + "': two images (." + sample.image_ext + " and ." +
                       member.ext + "), expected one";
        return skip_data();
      }
      sample.image_ext = member.ext;
      if (member.size == 0) {
        sample.fault = "sample '" + sample.key + "': its ." + member.ext + " is empty";
        return skip_data();
      }
      if (read_images_) return read_data(member, sample.image);
    } else if (member.ext == "cls") {
      if (sample.has_cls) {
        sample.fault = "sample '" + sample.key + "': two .cls members, expected one";
        return skip_data();
      }
      sample.has_cls = true;
      return read_data(member, sample.cls);
    }
    skip_data();  // an image when counting, or another member (.json, .txt, ...)
  }

  // The sample's fault, or "" once `out` holds it.
  std::string finish(ShardGathered& sample, ShardSample& out) const {
    const std::string where = "sample '" + sample.key + "': ";
    if (sample.image_ext.empty())
      return where + "no image, expected a .jpg, .jpeg, .png or .webp member";
    if (!sample.has_cls) return where + "no .cls member, expected the sample's class";
    // An ASCII integer; webdataset's writers may end it with a newline.
    const auto* begin = reinterpret_cast<const char*>(sample.cls.data());
    const auto* end = begin + sample.cls.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(*begin)))
      ++begin;
    while (end > begin && std::isspace(static_cast<unsigned char>(end[-1])))
      --end;
    int64_t label = 0;
    const auto parsed = std::from_chars(begin, end, label);
    if (begin == end || parsed.ec != std::errc() || parsed.ptr != end)
      return where + "its .cls holds '" + cls_preview(sample.cls) +
             "', expected an integer class index";
    if (options_.num_classes > 0 && (label < 0 || label >= options_.num_classes))
      return where + "class " + std::to_string(label) + " is outside [0, " +
             std::to_string(options_.num_classes) + ")";
    if (label < 0)
      return where + "class " + std::to_string(label) + " is negative, expected a class index";
    out.key = std::move(sample.key);
    out.image_ext = std::move(sample.image_ext);
    out.image = std::move(sample.image);
    out.label = label;
    return "";
  }

  void read_data(const ShardMember& member, std::vector<uint8_t>& out) {
    out.resize(static_cast<size_t>(member.size));  // at most max_member_bytes
    size_t got = 0;
    for (;;) {
      const la_ssize_t n = archive_read_data(a_.get(), out.data() + got, out.size() - got);
      if (n < 0) damaged(/*in_data=*/true);
      if (n == 0) break;
      got += static_cast<size_t>(n);
      if (got == out.size()) {
        uint8_t more = 0;  // the header's size must be the whole member
        const la_ssize_t extra = archive_read_data(a_.get(), &more, 1);
        if (extra < 0) damaged(/*in_data=*/true);
        if (extra == 0) break;
        got += static_cast<size_t>(extra);
        break;
      }
    }
    if (got != out.size())
      fail(shard_.string() + ": member '" + member.name + "': " + std::to_string(got) +
           " bytes or more where its header says " + std::to_string(member.size) +
           "; the tar is damaged");
  }

  void skip_data() {
    if (archive_read_data_skip(a_.get()) < ARCHIVE_WARN) damaged(/*in_data=*/true);
  }

  fs::path shard_;
  ShardOptions options_;
  bool read_images_;
  ReaderHandle a_{archive_read_new(), archive_read_free};
  std::optional<ShardMember> pending_;  // read ahead: the first member of the next sample
  bool at_end_ = false;
  std::string fatal_;        // the error that ended the reader
  std::string last_member_;  // for the message of a damaged tar
  std::unordered_set<std::string> keys_seen_;
  std::string last_key_;
  int64_t returned_ = 0, skipped_ = 0;
};

}  // namespace shard_scan

namespace {

// Decodes a BMP and encodes it as PNG, losslessly: gray when its three
// channels are equal, RGB otherwise (alpha is dropped).
std::vector<uint8_t> bmp_as_png(const fs::path& file) {
  at::Tensor image = io::read_image(file, /*channels=*/3, /*side=*/0);  // (3, H, W)
  if (image[0].equal(image[1]) && image[1].equal(image[2])) image = image.slice(0, 0, 1);
  return io::encode_png(image.contiguous());
}

std::string zero_padded(int64_t value, size_t width) {
  std::string digits = std::to_string(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

void add_shard_member(archive* a, const std::string& name, const void* data, size_t size,
                      const std::string& temp) {
  std::unique_ptr<archive_entry, void (*)(archive_entry*)> entry(archive_entry_new(),
                                                                 archive_entry_free);
  archive_entry_set_pathname(entry.get(), name.c_str());
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), 0644);
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(size));
  archive_entry_set_mtime(entry.get(), 0, 0);  // the same inputs give the same bytes
  if (archive_write_header(a, entry.get()) != ARCHIVE_OK ||
      (size > 0 && archive_write_data(a, data, size) != static_cast<la_ssize_t>(size)))
    throw Error(temp + ": cannot write member " + name + " (" + archive_error_string(a) + ")");
}

// One shard: the samples [begin, end) of `inputs`, each KEY.EXT and KEY.cls.
void write_one_shard(const std::string& temp, const std::vector<ShardInput>& inputs,
                     const std::vector<std::string>& exts, size_t begin, size_t end) {
  std::unique_ptr<archive, int (*)(archive*)> a(archive_write_new(), archive_write_free);
  // pax_restricted is ustar unless a name or size needs more.
  archive_write_set_format_pax_restricted(a.get());
  if (archive_write_open_filename(a.get(), temp.c_str()) != ARCHIVE_OK)
    throw Error(temp + ": cannot open for writing (" + archive_error_string(a.get()) + ")");
  const int64_t max_member = ShardOptions{}.max_member_bytes;
  for (size_t i = begin; i < end; ++i) {
    const std::string key = zero_padded(static_cast<int64_t>(i), 9);
    const bool bmp = exts[i] == "bmp";
    const std::vector<uint8_t> image =
        bmp ? bmp_as_png(inputs[i].file) : read_file_bytes(inputs[i].file);
    if (image.empty()) throw Error(inputs[i].file.string() + ": empty file, expected an image");
    if (static_cast<int64_t>(image.size()) > max_member)
      throw Error(inputs[i].file.string() + ": " + std::to_string(image.size()) +
                  " bytes, more than a shard's reader takes (" + std::to_string(max_member) + ")");
    add_shard_member(a.get(), key + "." + (bmp ? "png" : exts[i]), image.data(), image.size(),
                     temp);
    const std::string label = std::to_string(inputs[i].label);
    add_shard_member(a.get(), key + ".cls", label.data(), label.size(), temp);
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK)
    throw Error(temp + ": cannot finish the tar (" + archive_error_string(a.get()) + ")");
}

}  // namespace

struct ShardReader::Archive {
  shard_scan::ShardScan scan;
};

ShardReader::ShardReader(fs::path shard, ShardOptions options)
    : shard_(std::move(shard)), options_(options) {
  archive_.reset(new Archive{shard_scan::ShardScan(shard_, options_, /*read_images=*/true)});
}

ShardReader::~ShardReader() = default;

std::optional<ShardSample> ShardReader::next() {
  std::optional<ShardSample> sample = archive_->scan.next();
  if (sample) ++samples_;
  return sample;
}

int64_t count_shard_samples(const fs::path& shard, const ShardOptions& options) {
  shard_scan::ShardScan scan(shard, options, /*read_images=*/false);
  int64_t samples = 0;
  while (scan.next())
    ++samples;
  return samples;
}

// Each shard is a plain tar (ustar, pax where a name needs it) with mtime 0 and no
// newline after a .cls label, so the same inputs give the same bytes. It is written
// to a temporary file and renamed when complete (write_atomically).
std::string write_shards(const std::vector<ShardInput>& inputs, const fs::path& dir,
                         const std::string& prefix, int64_t per_shard,
                         const std::function<void(int64_t)>& progress) {
  if (per_shard < 1)
    throw Error(dir.string() + ": " + std::to_string(per_shard) +
                " samples per shard, expected at least 1");
  if (prefix.empty() || prefix.find_first_of("/{}") != std::string::npos)
    throw Error(dir.string() + ": shard prefix '" + prefix +
                "', expected a non-empty name without '/', '{' or '}'");
  if (inputs.empty()) throw Error(dir.string() + ": no images to write into shards");
  // Every input is checked before the first shard is written.
  std::vector<std::string> exts;
  exts.reserve(inputs.size());
  for (const auto& input : inputs) {
    const std::string dotted = input.file.extension().string();
    const std::string ext = dotted.empty() ? "" : shard_lower(dotted.substr(1));
    if (ext != "bmp" && !is_shard_image(ext))
      throw Error(input.file.string() + ": extension '" + dotted +
                  "', expected .jpg, .jpeg, .png, .webp or .bmp");
    if (input.label < 0)
      throw Error(input.file.string() + ": label " + std::to_string(input.label) +
                  ", expected a class index >= 0");
    exts.push_back(ext);
  }
  const int64_t count = static_cast<int64_t>(inputs.size());
  const int64_t shards = (count + per_shard - 1) / per_shard;
  const size_t width = std::max<size_t>(6, std::to_string(shards - 1).size());
  for (int64_t s = 0; s < shards; ++s) {
    const int64_t begin = s * per_shard, end = std::min(count, begin + per_shard);
    const fs::path shard = dir / (prefix + "-" + zero_padded(s, width) + ".tar");
    write_atomically(shard.string(), [&](const std::string& temp) {
      write_one_shard(temp, inputs, exts, static_cast<size_t>(begin), static_cast<size_t>(end));
    });
    if (progress) progress(end);
  }
  if (shards == 1) return prefix + "-" + zero_padded(0, width) + ".tar";
  return prefix + "-{" + zero_padded(0, width) + ".." + zero_padded(shards - 1, width) + "}.tar";
}

}  // namespace vit::data
