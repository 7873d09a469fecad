// zip_archive_problem on zip files written here byte by byte (stored and
// deflated records, the ZIP64 form), on damaged copies of them, and on a real
// LibTorch checkpoint with one flipped byte, which load_model must refuse
// before LibTorch's importer sees it.
#include "vit/weights/zip_check.hpp"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include "deflated.hpp"
#include "error_of.hpp"
#include "train/synthetic.hpp"
#include "vit/error.hpp"
#include "vit/train/training_checkpoint.hpp"
#include "vit/weights/checkpoint.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

void put16(Bytes& out, uint64_t v) {
  for (int i = 0; i < 2; ++i)
    out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put32(Bytes& out, uint64_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put64(Bytes& out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

Bytes raw_deflate(const std::string& text) {
  return fuzz::deflated(text.data(), text.size(), fuzz::DeflateWrapper::kRaw);
}

struct Entry {
  std::string name;
  std::string text;
  uint16_t method;  // 0 stored, 8 deflated
};

// A zip archive of `entries`; with `zip64`, the central directory keeps sizes
// and offsets in ZIP64 extra fields and the end record points to a ZIP64 one.
// `data_at` receives where each record's bytes start.
Bytes make_zip(const std::vector<Entry>& entries, bool zip64, std::vector<size_t>* data_at) {
  Bytes file, directory;
  for (const Entry& e : entries) {
    const Bytes data = e.method == 8 ? raw_deflate(e.text) : Bytes(e.text.begin(), e.text.end());
    const uint32_t crc =
        crc32(0, reinterpret_cast<const Bytef*>(e.text.data()), static_cast<uInt>(e.text.size()));
    const size_t offset = file.size();
    put32(file, 0x04034b50);
    put16(file, 20), put16(file, 0), put16(file, e.method), put32(file, 0);
    put32(file, crc), put32(file, data.size()), put32(file, e.text.size());
    put16(file, e.name.size()), put16(file, 3);  // 3 bytes of padding, as PyTorch aligns
    file.insert(file.end(), e.name.begin(), e.name.end());
    file.insert(file.end(), {0, 0, 0});
    if (data_at) data_at->push_back(file.size());
    file.insert(file.end(), data.begin(), data.end());

    const uint64_t big = 0xFFFFFFFF;
    put32(directory, 0x02014b50);
    put16(directory, 20), put16(directory, 20), put16(directory, 0), put16(directory, e.method);
    put32(directory, 0), put32(directory, crc);
    put32(directory, zip64 ? big : data.size()), put32(directory, zip64 ? big : e.text.size());
    put16(directory, e.name.size()), put16(directory, zip64 ? 28 : 0), put16(directory, 0);
    put16(directory, 0), put16(directory, 0), put32(directory, 0);
    put32(directory, zip64 ? big : offset);
    directory.insert(directory.end(), e.name.begin(), e.name.end());
    if (zip64) {
      put16(directory, 0x0001), put16(directory, 24);
      put64(directory, e.text.size()), put64(directory, data.size()), put64(directory, offset);
    }
  }
  const size_t directory_at = file.size();
  file.insert(file.end(), directory.begin(), directory.end());
  if (zip64) {
    const size_t end64_at = file.size();
    put32(file, 0x06064b50), put64(file, 44), put16(file, 45), put16(file, 45);
    put32(file, 0), put32(file, 0), put64(file, entries.size()), put64(file, entries.size());
    put64(file, directory.size()), put64(file, directory_at);
    put32(file, 0x07064b50), put32(file, 0), put64(file, end64_at), put32(file, 1);
  }
  put32(file, 0x06054b50), put16(file, 0), put16(file, 0);
  put16(file, zip64 ? 0xFFFF : entries.size()), put16(file, zip64 ? 0xFFFF : entries.size());
  put32(file, zip64 ? 0xFFFFFFFF : directory.size());
  put32(file, zip64 ? 0xFFFFFFFF : directory_at);
  put16(file, 0);
  return file;
}

const std::vector<Entry> kEntries = {
    {"archive/version", "3\n", 0},
    {"archive/code.py", std::string(600, 'x') + "def forward(self):\n  return 1\n", 8},
    {"archive/data/0", "0123456789abcdef", 0},
};

class ZipCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_zip_check_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const Bytes& bytes, const std::string& name = "a.zip") {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return path.string();
  }

  std::optional<std::string> problem_of(const Bytes& bytes) {
    return zip_archive_problem(write(bytes));
  }

  fs::path dir_;
};

TEST_F(ZipCheckTest, StoredAndDeflatedRecordsPassInBothForms) {
  for (bool zip64 : {false, true}) {
    const Bytes zip = make_zip(kEntries, zip64, nullptr);
    EXPECT_EQ(problem_of(zip), std::nullopt) << "zip64 " << zip64;
  }
}

TEST_F(ZipCheckTest, AFlippedByteInAnyRecordIsNamed) {
  for (bool zip64 : {false, true}) {
    std::vector<size_t> data_at;
    const Bytes zip = make_zip(kEntries, zip64, &data_at);
    Bytes stored = zip;
    stored[data_at[2] + 5] ^= 0x01;
    EXPECT_EQ(problem_of(stored), "record 'archive/data/0' fails its CRC-32 check (damaged)");
    Bytes first = zip;
    first[data_at[0]] = '4';
    EXPECT_EQ(problem_of(first), "record 'archive/version' fails its CRC-32 check (damaged)");
    // In a deflated record, a flip breaks the stream or changes what it inflates to.
    Bytes deflated = zip;
    deflated[data_at[1] + 3] ^= 0x10;
    const auto problem = problem_of(deflated);
    ASSERT_TRUE(problem.has_value());
    EXPECT_EQ(problem->rfind("record 'archive/code.py'", 0), 0u) << *problem;
  }
}

TEST_F(ZipCheckTest, TruncatedAndEmptyFilesAreNotZipArchives) {
  const Bytes zip = make_zip(kEntries, false, nullptr);
  const std::string not_zip = "not a zip archive (no end-of-central-directory record; truncated?)";
  EXPECT_EQ(problem_of(Bytes(zip.begin(), zip.end() - 30)), not_zip);
  EXPECT_EQ(problem_of(Bytes{}), not_zip);
  EXPECT_EQ(problem_of(Bytes(100, 'a')), not_zip);
}

TEST_F(ZipCheckTest, DirectoryFieldsThatPointOutsideTheFileAreRefused) {
  const Bytes zip = make_zip(kEntries, false, nullptr);
  const size_t end = zip.size() - 22;
  Bytes offset = zip;
  offset[end + 19] = 0x7F;  // the directory's offset, high byte
  EXPECT_EQ(problem_of(offset), "its central directory lies past the end of the file (truncated?)");
  Bytes count = zip;
  count[end + 10] = 0xFE;  // 254 records in a directory of three
  EXPECT_EQ(problem_of(count).value().find("its central directory claims 254 records"), 0u);
  // The first directory entry's local-header offset, moved past the end.
  const size_t directory_at = zip[end + 16] | zip[end + 17] << 8;
  Bytes local = zip;
  local[directory_at + 45] = 0x7F;
  EXPECT_EQ(problem_of(local),
            "record 'archive/version's header lies past the end of the file (truncated?)");
}

TEST_F(ZipCheckTest, ACompressionMethodLibTorchNeverWritesIsRefused) {
  Bytes zip = make_zip(kEntries, false, nullptr);
  const size_t end = zip.size() - 22;
  const size_t directory_at = zip[end + 16] | zip[end + 17] << 8;
  zip[directory_at + 10] = 12;  // bzip2
  EXPECT_EQ(problem_of(zip),
            "record 'archive/version' uses compression method 12 (LibTorch writes 0 and 8)");
}

TEST_F(ZipCheckTest, AMissingFileIsAnError) {
  EXPECT_EQ(testing::error_of([&] { zip_archive_problem((dir_ / "none.zip").string()); }),
            (dir_ / "none.zip").string() + ": cannot open it for reading");
}

// A real training checkpoint passes; a flipped byte anywhere in a tensor
// record makes load_model and the resume path refuse it by name.
TEST_F(ZipCheckTest, ADamagedCheckpointIsRefusedBeforeLibTorchReadsIt) {
  const std::string good = (dir_ / "good.pt").string();
  testing::save_texture_checkpoint(good);
  EXPECT_EQ(zip_archive_problem(good), std::nullopt);

  std::ifstream in(good, std::ios::binary);
  Bytes bytes((std::istreambuf_iterator<char>(in)), {});
  // The weights are the bulk of the file, so its middle lies in a tensor record.
  bytes[bytes.size() / 2] ^= 0x40;
  const std::string bad = write(bytes, "bad.pt");
  const std::string message = testing::error_of([&] { load_model(bad); });
  EXPECT_EQ(message.rfind(bad + ": not a readable vit checkpoint (record '", 0), 0u) << message;
  EXPECT_NE(message.find("' fails its CRC-32 check (damaged))"), std::string::npos) << message;
  EXPECT_EQ(testing::error_of([&] { read_checkpoint_meta(bad); }), message);
}

}  // namespace
}  // namespace vit
