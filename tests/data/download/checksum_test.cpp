#include "vit/data/download/checksum.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "error_of.hpp"

namespace vit::data {
namespace {

// The test vectors of RFC 1321 and FIPS 180-2.
TEST(Checksum, KnownDigests) {
  Digest md5(DigestKind::kMd5);
  md5.update("abc", 3);
  EXPECT_EQ(md5.hex(), "900150983cd24fb0d6963f7d28e17f72");
  Digest empty(DigestKind::kMd5);
  EXPECT_EQ(empty.hex(), "d41d8cd98f00b204e9800998ecf8427e");
  Digest sha(DigestKind::kSha256);
  sha.update("ab", 2);  // in pieces
  sha.update("c", 1);
  EXPECT_EQ(sha.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Checksum, OfAFile) {
  const auto file =
      std::filesystem::temp_directory_path() / ("vit_checksum_" + std::to_string(::getpid()));
  std::ofstream(file, std::ios::binary) << "The quick brown fox jumps over the lazy dog";
  EXPECT_EQ(file_digest(file, DigestKind::kMd5), "9e107d9d372bb6826bd81d3542a419d6");
  EXPECT_EQ(file_digest(file, DigestKind::kSha256),
            "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592");
  std::filesystem::remove(file);
  EXPECT_EQ(testing::error_of([&] { file_digest(file, DigestKind::kMd5); }),
            file.string() + ": cannot open for reading (No such file or directory)");
}

}  // namespace
}  // namespace vit::data
