#include "vit/data/webdataset.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <opencv2/imgcodecs.hpp>

#include "archive_writer.hpp"
#include "error_of.hpp"
#include "vit/data/brace_pattern.hpp"
#include "vit/data/file_bytes.hpp"
#include "vit/io/image_io.hpp"

namespace fs = std::filesystem;

namespace vit::data {
namespace {

using fuzz::ArchiveEntry;
using fuzz::ArchiveFormat;
using Type = ArchiveEntry::Type;
using testing::error_of;
using Bytes = std::vector<uint8_t>;

// A real encoded image of 6 x 5 pixels whose colour depends on `seed`.
std::string encoded(const std::string& ext, int seed) {
  cv::Mat mat(6, 5, CV_8UC3, cv::Scalar(seed * 7 % 256, seed * 31 % 256, 200));
  mat.at<cv::Vec3b>(1, 2) = cv::Vec3b(0, 255, static_cast<uchar>(seed));
  std::vector<uchar> bytes;
  EXPECT_TRUE(cv::imencode(ext, mat, bytes));
  return std::string(bytes.begin(), bytes.end());
}

Bytes bytes_of(const std::string& text) {
  return Bytes(text.begin(), text.end());
}

// Captures spdlog's lines while it lives.
class WarningLog {
 public:
  WarningLog() {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines_);
    sink->set_pattern("%v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  }
  ~WarningLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return lines_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_ = spdlog::default_logger();
  std::ostringstream lines_;
};

class ShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_webdataset_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path tar(const std::vector<ArchiveEntry>& entries, const std::string& name = "s.tar") {
    return file(name, fuzz::make_archive(ArchiveFormat::kTar, entries));
  }
  fs::path file(const std::string& name, const Bytes& bytes) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return path;
  }

  static std::vector<ShardSample> read_all(const fs::path& shard,
                                           const ShardOptions& options = {}) {
    ShardReader reader(shard, options);
    std::vector<ShardSample> samples;
    while (auto sample = reader.next())
      samples.push_back(std::move(*sample));
    return samples;
  }
  // The error of reading the whole shard, and that of counting it, which must agree.
  std::string read_error(const fs::path& shard, const ShardOptions& options = {}) {
    const std::string message = error_of([&] { read_all(shard, options); });
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;  // one line
    return message;
  }
  std::string fault(const std::vector<ArchiveEntry>& entries, const ShardOptions& options = {}) {
    const fs::path shard = tar(entries);
    const std::string message = read_error(shard, options);
    EXPECT_EQ(error_of([&] { count_shard_samples(shard, options); }), message);
    return message;
  }
  std::string s() const { return (dir_ / "s.tar").string(); }

  fs::path dir_;
  const std::string jpg_ = encoded(".jpg", 1);
  const std::string png_ = encoded(".png", 2);
};

// --- writing, and reading back --------------------------------------------------

class WebdatasetTest : public ShardTest {};

TEST_F(WebdatasetTest, RoundTripKeepsBytesKeysLabelsAndOrder) {
  std::vector<ShardInput> inputs;
  std::vector<Bytes> stored;
  for (int i = 0; i < 25; ++i) {
    const std::string ext = i % 3 == 0 ? ".png" : (i == 4 ? ".JPG" : ".jpg");
    const std::string bytes = encoded(ext == ".png" ? ".png" : ".jpg", i);
    const fs::path image = dir_ / "in" / ("img" + std::to_string(i) + ext);
    fs::create_directories(image.parent_path());
    std::ofstream(image, std::ios::binary) << bytes;
    inputs.push_back({image, (i * 7) % 10});
    stored.push_back(bytes_of(bytes));
  }
  std::vector<int64_t> progress;
  const std::string pattern = write_shards(inputs, dir_ / "out", "train", /*per_shard=*/10,
                                           [&](int64_t written) { progress.push_back(written); });
  EXPECT_EQ(pattern, "train-{000000..000002}.tar");
  EXPECT_EQ(progress, (std::vector<int64_t>{10, 20, 25}));
  const std::vector<fs::path> shards = shard_files(pattern, dir_ / "out", "test");
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[2], dir_ / "out" / "train-000002.tar");
  size_t files_in_out = 0;  // no temporary file is left beside the shards
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir_ / "out"))
    ++files_in_out;
  EXPECT_EQ(files_in_out, 3u);

  const std::vector<int64_t> per_shard = {10, 10, 5};
  size_t i = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::vector<ShardSample> samples = read_all(shards[s], {64 << 20, 10, false});
    ASSERT_EQ(static_cast<int64_t>(samples.size()), per_shard[s]);
    EXPECT_EQ(count_shard_samples(shards[s], {}), per_shard[s]);
    for (const auto& sample : samples) {
      char key[16];
      std::snprintf(key, sizeof key, "%09zu", i);
      EXPECT_EQ(sample.key, key);
      EXPECT_EQ(sample.image_ext, i % 3 == 0 ? "png" : "jpg") << i;  // .JPG stored as "jpg"
      EXPECT_EQ(sample.image, stored[i]) << i;
      EXPECT_EQ(sample.label, static_cast<int64_t>((i * 7) % 10));
      ++i;
    }
  }
  EXPECT_EQ(i, 25u);
}

TEST_F(WebdatasetTest, TheSameInputsGiveTheSameBytes) {
  const fs::path image = dir_ / "a.png";
  std::ofstream(image, std::ios::binary) << png_;
  EXPECT_EQ(write_shards({{image, 3}, {image, 4}}, dir_ / "one", "x", 5), "x-000000.tar");
  EXPECT_EQ(write_shards({{image, 3}, {image, 4}}, dir_ / "two", "x", 5), "x-000000.tar");
  EXPECT_EQ(read_file_bytes(dir_ / "one" / "x-000000.tar"),
            read_file_bytes(dir_ / "two" / "x-000000.tar"));
}

TEST_F(WebdatasetTest, ABmpIsStoredAsAPngOfTheSamePixels) {
  const std::string bmp = encoded(".bmp", 5);
  const fs::path image = dir_ / "a.BMP";
  std::ofstream(image, std::ios::binary) << bmp;
  EXPECT_EQ(write_shards({{image, 1}}, dir_, "b", 4), "b-000000.tar");
  const std::vector<ShardSample> samples = read_all(dir_ / "b-000000.tar");
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].key, "000000000");
  EXPECT_EQ(samples[0].image_ext, "png");
  EXPECT_EQ(samples[0].image[1], 'P');
  EXPECT_TRUE(io::decode_image(samples[0].image, 3, 0, "png")
                  .equal(io::decode_image(bytes_of(bmp), 3, 0, "bmp")));
}

TEST_F(WebdatasetTest, RefusesBadInputsBeforeWritingAnyShard) {
  const fs::path good = dir_ / "a.jpg", gif = dir_ / "b.gif";
  std::ofstream(good, std::ios::binary) << jpg_;
  std::ofstream(gif, std::ios::binary) << "GIF89a";
  const fs::path out = dir_ / "out";
  EXPECT_EQ(error_of([&] {
              write_shards({{good, 0}, {gif, 1}}, out, "t", 1);
            }),
            gif.string() + ": extension '.gif', expected .jpg, .jpeg, .png, .webp or .bmp");
  EXPECT_EQ(error_of([&] {
              write_shards({{good, 0}, {good, -2}}, out, "t", 1);
            }),
            good.string() + ": label -2, expected a class index >= 0");
  EXPECT_EQ(error_of([&] {
              write_shards({{good, 0}}, out, "t", 0);
            }),
            out.string() + ": 0 samples per shard, expected at least 1");
  EXPECT_EQ(error_of([&] { write_shards({}, out, "t", 1); }),
            out.string() + ": no images to write into shards");
  EXPECT_EQ(
      error_of([&] {
        write_shards({{good, 0}}, out, "a/b", 1);
      }),
      out.string() + ": shard prefix 'a/b', expected a non-empty name without '/', '{' or '}'");
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(WebdatasetTest, AMissingImageLeavesNoPartialShard) {
  const fs::path good = dir_ / "a.jpg";
  std::ofstream(good, std::ios::binary) << jpg_;
  const fs::path out = dir_ / "out";
  const std::string message = error_of([&] {
    write_shards({{good, 0}, {good, 1}, {dir_ / "gone.jpg", 2}}, out, "t", 2);
  });
  EXPECT_EQ(message.rfind((out / "t-000001.tar").string() + ": write failed (", 0), 0u) << message;
  EXPECT_NE(message.find("gone.jpg"), std::string::npos) << message;
  EXPECT_TRUE(fs::exists(out / "t-000000.tar"));  // the first shard was whole
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(out))
    ++files;
  EXPECT_EQ(files, 1u);
}

// --- reading ---------------------------------------------------------------------

class ShardReaderTest : public ShardTest {};

TEST_F(ShardReaderTest, ReadsSamplesInOrderWithTheirFoldersInTheKeys) {
  const fs::path shard = tar({{"n01/", "", Type::kFolder},
                              {"n01/a_1.jpg", jpg_},
                              {"n01/a_1.cls", "4"},
                              {"n01/a_1.json", "{\"w\": 5}"},
                              {"v1.2/b.PNG", png_},
                              {"v1.2/b.CLS", "0"},
                              {"README", "no extension, so no sample's"},
                              {"c.webp", "RIFF....WEBP"},
                              {"c.seg.png", png_},  // extension "seg.png": not an image
                              {"c.cls", "12"}});
  const std::vector<ShardSample> samples = read_all(shard);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].key, "n01/a_1");
  EXPECT_EQ(samples[0].image_ext, "jpg");
  EXPECT_EQ(samples[0].image, bytes_of(jpg_));
  EXPECT_EQ(samples[0].label, 4);
  EXPECT_EQ(samples[1].key, "v1.2/b");
  EXPECT_EQ(samples[1].image_ext, "png");
  EXPECT_EQ(samples[1].image, bytes_of(png_));
  EXPECT_EQ(samples[1].label, 0);
  EXPECT_EQ(samples[2].key, "c");
  EXPECT_EQ(samples[2].image_ext, "webp");
  EXPECT_EQ(samples[2].image, bytes_of("RIFF....WEBP"));
  EXPECT_EQ(samples[2].label, 12);
  EXPECT_EQ(count_shard_samples(shard, {}), 3);
}

TEST_F(ShardReaderTest, AClsMayHaveSurroundingWhitespace) {
  const fs::path shard = tar({{"a.jpeg", jpg_},
                              {"a.cls", " 3\n"},
                              {"b.jpg", jpg_},
                              {"b.cls", "\t17\r\n"},
                              {"c.jpg", jpg_},
                              {"c.cls", "0\n\n"}});
  const std::vector<ShardSample> samples = read_all(shard);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].image_ext, "jpeg");
  EXPECT_EQ(samples[0].label, 3);
  EXPECT_EQ(samples[1].label, 17);
  EXPECT_EQ(samples[2].label, 0);
}

TEST_F(ShardReaderTest, RefusesUnsafeMembers) {
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", "1"}, {"../b.jpg", jpg_}, {"../b.cls", "1"}}),
            s() + ": member '../b.jpg': a path with '..', expected a path inside the shard");
  EXPECT_EQ(fault({{"/abs/b.jpg", jpg_}, {"/abs/b.cls", "1"}}),
            s() + ": member '/abs/b.jpg': an absolute path, expected a path inside the shard");
  EXPECT_EQ(fault({{"b.jpg", "c.jpg", Type::kSymlink}, {"b.cls", "1"}}),
            s() +
                ": member 'b.jpg': a symbolic link to 'c.jpg', expected a regular file or a "
                "folder");
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", "1"}, {"b.jpg", "a.jpg", Type::kHardlink}}),
            s() + ": member 'b.jpg': a hard link to 'a.jpg', expected a regular file or a folder");
  EXPECT_EQ(fault({{"a.jpg", std::string(300, 'x')}, {"a.cls", "1"}}, {100, 0, false}),
            s() + ": member 'a.jpg': 300 bytes, more than the limit of 100");
  // A link is refused even where it would be passed over, as a member without an extension.
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", "1"}, {"link", "/etc/passwd", Type::kSymlink}}),
            s() +
                ": member 'link': a symbolic link to '/etc/passwd', expected a regular file or "
                "a folder");
}

TEST_F(ShardReaderTest, RefusesIncompleteOrContradictorySamples) {
  EXPECT_EQ(fault({{"a.jpg", jpg_}}),
            s() + ": sample 'a': no .cls member, expected the sample's class");
  EXPECT_EQ(fault({{"a.cls", "1"}, {"a.json", "{}"}}),
            s() + ": sample 'a': no image, expected a .jpg, .jpeg, .png or .webp member");
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", "cat"}}),
            s() + ": sample 'a': its .cls holds 'cat', expected an integer class index");
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", "1.5"}}),
            s() + ": sample 'a': its .cls holds '1.5', expected an integer class index");
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", ""}}),
            s() + ": sample 'a': its .cls holds '', expected an integer class index");
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", "99999999999999999999"}}),
            s() +
                ": sample 'a': its .cls holds '99999999999999999999', expected an integer "
                "class index");
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", "10"}}, {64 << 20, 10, false}),
            s() + ": sample 'a': class 10 is outside [0, 10)");
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", "-1"}}, {64 << 20, 10, false}),
            s() + ": sample 'a': class -1 is outside [0, 10)");
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", "-1"}}),
            s() + ": sample 'a': class -1 is negative, expected a class index");
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.png", png_}, {"a.cls", "1"}}),
            s() + ": sample 'a': two images (.jpg and .png), expected one");
  EXPECT_EQ(fault({{"a.jpg", jpg_}, {"a.cls", "1"}, {"a.cls", "2"}}),
            s() + ": sample 'a': two .cls members, expected one");
  EXPECT_EQ(fault({{"a.jpg", ""}, {"a.cls", "1"}}), s() + ": sample 'a': its .jpg is empty");
}

TEST_F(ShardReaderTest, RefusesAKeySplitByAnotherKey) {
  const fs::path shard =
      tar({{"a.jpg", jpg_}, {"b.jpg", jpg_}, {"b.cls", "2"}, {"a.cls", "1"}, {"c.jpg", jpg_}});
  ShardReader reader(shard, {});
  EXPECT_EQ(error_of([&] { reader.next(); }),
            s() + ": sample 'a': no .cls member, expected the sample's class");
  const fs::path split =
      tar({{"a.jpg", jpg_}, {"a.cls", "1"}, {"b.jpg", jpg_}, {"b.cls", "2"}, {"a.json", "{}"}});
  ShardReader again(split, {});
  ASSERT_EQ(again.next()->key, "a");
  ASSERT_EQ(again.next()->key, "b");
  const std::string message = error_of([&] { again.next(); });
  EXPECT_EQ(message, s() +
                         ": sample 'a': its members come again after sample 'b', expected a "
                         "sample's members side by side");
  EXPECT_EQ(error_of([&] { again.next(); }), message);  // an error ends the reader
  EXPECT_EQ(error_of([&] { count_shard_samples(split, {}); }), message);
}

TEST_F(ShardReaderTest, RefusesADamagedTruncatedOrForeignFile) {
  const Bytes whole = fuzz::make_archive(
      ArchiveFormat::kTar, {{"a.jpg", std::string(3000, 'x')}, {"a.cls", "1"}, {"b.jpg", jpg_}});
  // Cut 1000 bytes into a.jpg's data (after its 512-byte header).
  const fs::path cut = file("s.tar", Bytes(whole.begin(), whole.begin() + 1512));
  EXPECT_EQ(
      read_error(cut),
      s() + ": damaged, truncated or not a tar file (Truncated tar archive) in member 'a.jpg'");
  EXPECT_EQ(
      read_error(cut, {64 << 20, 0, /*skip_corrupt=*/true}),
      s() + ": damaged, truncated or not a tar file (Truncated tar archive) in member 'a.jpg'");
  EXPECT_EQ(error_of([&] { count_shard_samples(cut, {}); }),
            s() +
                ": damaged, truncated or not a tar file (Truncated input file (needed 3072 "
                "bytes, only 1000 available)) in member 'a.jpg'");
  const std::string foreign =
      s() + ": damaged, truncated or not a tar file (Unrecognized archive format)";
  file("s.tar", bytes_of("this is a text file, not a tar file, and that is all it is.\n"));
  EXPECT_EQ(read_error(dir_ / "s.tar"), foreign);
  EXPECT_EQ(error_of([&] { count_shard_samples(dir_ / "s.tar", {}); }), foreign);
  file("s.tar", {});
  EXPECT_EQ(read_error(dir_ / "s.tar"), foreign);
  file("s.tar", fuzz::make_archive(ArchiveFormat::kTarGz, {{"a.jpg", jpg_}, {"a.cls", "1"}}));
  EXPECT_EQ(read_error(dir_ / "s.tar"), foreign);  // a shard is a plain tar
  EXPECT_EQ(
      read_error(dir_ / "gone.tar"),
      (dir_ / "gone.tar").string() + ": missing or not a file, expected a WebDataset shard (.tar)");
}

TEST_F(ShardReaderTest, RefusesAShardWithoutSamples) {
  const std::string empty =
      s() + ": no samples, expected at least one (an image and a .cls sharing a key)";
  EXPECT_EQ(fault({}), empty);
  EXPECT_EQ(fault({{"meta/", "", Type::kFolder}, {"notes", "text"}, {".hidden.jpg", jpg_}}), empty);
}

TEST_F(ShardReaderTest, SkipCorruptLeavesOutTheBadSamplesWithOneWarningEach) {
  const fs::path shard = tar({{"a.jpg", jpg_},
                              {"a.cls", "1"},
                              {"b.jpg", jpg_},
                              {"c.png", png_},
                              {"c.cls", "x"},
                              {"../d.jpg", jpg_},
                              {"../d.cls", "4"},
                              {"e.png", png_},
                              {"e.cls", "5"}});
  const ShardOptions skip{64 << 20, 10, /*skip_corrupt=*/true};
  WarningLog log;
  const std::vector<ShardSample> samples = read_all(shard, skip);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].key, "a");
  EXPECT_EQ(samples[0].label, 1);
  EXPECT_EQ(samples[1].key, "e");
  EXPECT_EQ(samples[1].image, bytes_of(png_));
  EXPECT_EQ(samples[1].label, 5);
  EXPECT_EQ(log.text(),
            s() + ": sample 'b': no .cls member, expected the sample's class; sample skipped\n" +
                s() +
                ": sample 'c': its .cls holds 'x', expected an integer class index; sample "
                "skipped\n" +
                s() +
                ": member '../d.jpg': a path with '..', expected a path inside the shard; "
                "sample skipped\n");
  EXPECT_EQ(count_shard_samples(shard, skip), 2);
  // Without skip_corrupt the first bad sample ends the reading.
  EXPECT_EQ(read_error(shard), s() + ": sample 'b': no .cls member, expected the sample's class");
}

TEST_F(ShardReaderTest, SkipCorruptStillRefusesAShardWithNothingGood) {
  const fs::path shard = tar({{"a.jpg", jpg_}, {"b.cls", "1"}});
  WarningLog log;
  EXPECT_EQ(read_error(shard, {64 << 20, 0, true}),
            s() +
                ": no samples (2 faulty ones skipped), expected at least one (an image and a "
                ".cls sharing a key)");
}

}  // namespace
}  // namespace vit::data
