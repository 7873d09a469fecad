#include "vit/data/download/archive_unpack.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "archive_writer.hpp"
#include "error_of.hpp"

namespace fs = std::filesystem;

namespace vit::data {
namespace {

using fuzz::ArchiveEntry;
using fuzz::ArchiveFormat;
using Type = ArchiveEntry::Type;
using testing::error_of;

std::string text_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ArchiveUnpackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_unpack_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    fs::remove(archive_);
  }

  // Writes the archive and unpacks it into dir_/out; returns the error ("(no error)").
  std::string unpack(ArchiveFormat format, const std::vector<ArchiveEntry>& entries,
                     const std::string& top = "", uint64_t max_bytes = 1 << 20,
                     uint64_t max_entries = 1000) {
    const auto bytes = fuzz::make_archive(format, entries);
    std::ofstream(archive_, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return error_of([&] { unpack_archive(archive_, out(), top, {max_bytes, max_entries}); });
  }
  fs::path out() const { return dir_ / "out"; }

  fs::path dir_;
  fs::path archive_ =
      fs::temp_directory_path() / ("vit_unpack_archive_" + std::to_string(::getpid()) + ".bin");
};

TEST_F(ArchiveUnpackTest, UnpacksATarGzTopFolderIntoTheDestination) {
  EXPECT_EQ(unpack(ArchiveFormat::kTarGz,
                   {{"top/", "", Type::kFolder},
                    {"top/a.bin", "alpha"},
                    {"top/sub/b.txt", "beta"},
                    {"top/link", "sub/b.txt", Type::kSymlink},
                    {"top/hard", "top/a.bin", Type::kHardlink}},
                   "top"),
            "(no error)");
  EXPECT_EQ(text_of(out() / "a.bin"), "alpha");
  EXPECT_EQ(text_of(out() / "sub" / "b.txt"), "beta");
  EXPECT_EQ(fs::read_symlink(out() / "link"), "sub/b.txt");
  EXPECT_EQ(text_of(out() / "link"), "beta");
  EXPECT_EQ(text_of(out() / "hard"), "alpha");
  EXPECT_FALSE(fs::exists(out() / "top"));
}

TEST_F(ArchiveUnpackTest, UnpacksAZipAsItIs) {
  EXPECT_EQ(unpack(ArchiveFormat::kZip, {{"d/x.txt", "zip x"}, {"y.txt", "zip y"}}), "(no error)");
  EXPECT_EQ(text_of(out() / "d" / "x.txt"), "zip x");
  EXPECT_EQ(text_of(out() / "y.txt"), "zip y");
}

TEST_F(ArchiveUnpackTest, RefusesAbsolutePathsAndDotDot) {
  EXPECT_EQ(unpack(ArchiveFormat::kTarGz, {{"/etc/evil", "x"}}),
            archive_.string() + ": entry '/etc/evil': an absolute path; refused");
  EXPECT_EQ(unpack(ArchiveFormat::kTarGz, {{"a/../../evil", "x"}}),
            archive_.string() + ": entry 'a/../../evil': a path with '..'; refused");
  EXPECT_EQ(unpack(ArchiveFormat::kZip, {{"../evil", "x"}}),
            archive_.string() + ": entry '../evil': a path with '..'; refused");
  EXPECT_FALSE(fs::exists(dir_ / "evil"));
  EXPECT_FALSE(fs::exists(fs::temp_directory_path() / "evil"));
}

TEST_F(ArchiveUnpackTest, RefusesLinksThatMayLeadOutside) {
  EXPECT_EQ(unpack(ArchiveFormat::kTarGz, {{"link", "/etc/passwd", Type::kSymlink}}),
            archive_.string() +
                ": entry 'link': a symbolic link to '/etc/passwd', which may lead outside the "
                "dataset; refused");
  EXPECT_EQ(unpack(ArchiveFormat::kTarGz, {{"a/link", "../../x", Type::kSymlink}}),
            archive_.string() +
                ": entry 'a/link': a symbolic link to '../../x', which may lead outside the "
                "dataset; refused");
  EXPECT_EQ(unpack(ArchiveFormat::kTarGz, {{"hard", "../outside", Type::kHardlink}}),
            archive_.string() + ": entry '../outside': a path with '..'; refused");
  std::ofstream(dir_ / "victim") << "keep";
  EXPECT_EQ(unpack(ArchiveFormat::kTarGz, {{"hard", (dir_ / "victim").string(), Type::kHardlink}}),
            archive_.string() + ": entry '" + (dir_ / "victim").string() +
                "': an absolute path; refused");
  EXPECT_EQ(unpack(ArchiveFormat::kTarGz, {{"hard", "missing", Type::kHardlink}}),
            archive_.string() +
                ": entry 'hard': a hard link to missing, not a file unpacked before it; refused");
  EXPECT_EQ(text_of(dir_ / "victim"), "keep");
}

TEST_F(ArchiveUnpackTest, RefusesEntriesOutsideTheTopFolder) {
  EXPECT_EQ(
      unpack(ArchiveFormat::kTarGz, {{"top/a", "x"}, {"other/b", "y"}}, "top"),
      archive_.string() + ": entry 'other/b': outside the archive's top folder top/; refused");
}

TEST_F(ArchiveUnpackTest, RefusesAZipBombPastTheByteCap) {
  // 1 MiB of zeros compresses to about a kilobyte; the cap is 100 kB.
  const std::string zeros(1 << 20, '\0');
  const auto error = unpack(ArchiveFormat::kZip, {{"bomb.bin", zeros}}, "", 100'000);
  EXPECT_EQ(error, archive_.string() +
                       ": entry 'bomb.bin': the archive unpacks to more than 100000 bytes, far "
                       "more than the dataset; refused");
  EXPECT_LT(fs::file_size(archive_), 20'000u);
  EXPECT_EQ(unpack(ArchiveFormat::kTarGz, {{"a", "1"}, {"b", "2"}, {"c", "3"}}, "", 1 << 20, 2),
            archive_.string() + ": more than 2 entries; refused");
}

TEST_F(ArchiveUnpackTest, RefusesATruncatedOrForeignFile) {
  const std::string payload(200'000, 'v');
  auto bytes = fuzz::make_archive(ArchiveFormat::kTarGz, {{"a.bin", payload + "tail"}});
  bytes.resize(bytes.size() / 2);
  std::ofstream(archive_, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  const auto error = error_of([&] { unpack_archive(archive_, out(), "", {1 << 20, 100}); });
  EXPECT_EQ(
      error.rfind(archive_.string() + ": damaged, truncated or not a tar or zip archive (", 0), 0u)
      << error;
  std::ofstream(archive_, std::ios::binary) << "just some text, no archive";
  const auto foreign = error_of([&] { unpack_archive(archive_, out(), "", {1 << 20, 100}); });
  EXPECT_NE(foreign.find(archive_.string() + ": "), std::string::npos) << foreign;
  EXPECT_EQ(foreign.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace vit::data
