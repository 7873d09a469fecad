// Downloads from a loopback HTTP server that the test starts on 127.0.0.1:
// archives in the official layouts (built here, small), and every failure a
// user may meet. No test reaches the internet.
#include "vit/data/download/dataset_download.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "archive_writer.hpp"
#include "as_nobody.hpp"
#include "commands/cmd_data.hpp"
#include "deflated.hpp"
#include "error_of.hpp"
#include "loopback_http_server.hpp"
#include "process.hpp"
#include "vit/data/data_splits.hpp"
#include "vit/data/download/checksum.hpp"
#include "vit/data/download/dataset_archives.hpp"
#include "vit_test_paths.hpp"

namespace fs = std::filesystem;

namespace vit::data {
namespace {

using fuzz::ArchiveEntry;
using fuzz::ArchiveFormat;
using testing::error_of;
using testing::LoopbackHttpServer;
using Bytes = std::vector<uint8_t>;

constexpr int kTrainPerBatch = 20;  // x 5 batches
constexpr int kTest = 10;
const char* const kCifarTop = "cifar-10-batches-bin";

// n CIFAR-10 records: a label (i % 10), then 3072 pixels of noise, so the
// archive does not compress to nothing.
std::string cifar_records(int n, uint32_t seed) {
  std::mt19937 random(seed);
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += static_cast<char>(i % 10);
    for (int p = 0; p < 3072; ++p)
      out += static_cast<char>(random() & 0xff);
  }
  return out;
}

std::vector<ArchiveEntry> cifar10_entries() {
  std::vector<ArchiveEntry> entries = {
      {std::string(kCifarTop) + "/", "", ArchiveEntry::Type::kFolder}};
  for (int b = 1; b <= 5; ++b)
    entries.push_back({std::string(kCifarTop) + "/data_batch_" + std::to_string(b) + ".bin",
                       cifar_records(kTrainPerBatch, b)});
  entries.push_back({std::string(kCifarTop) + "/test_batch.bin", cifar_records(kTest, 9)});
  entries.push_back({std::string(kCifarTop) + "/batches.meta.txt",
                     "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n"});
  return entries;
}

std::string sha256_of(const Bytes& bytes) {
  Digest d(DigestKind::kSha256);
  d.update(bytes.data(), bytes.size());
  return d.hex();
}

Bytes gzip(const std::string& in) {
  return fuzz::deflated(in.data(), in.size(), fuzz::DeflateWrapper::kGzip, Z_BEST_SPEED);
}

std::string be32(uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

std::string idx_images(int n) {
  std::string out = be32(0x803) + be32(n) + be32(28) + be32(28);
  for (int i = 0; i < n * 28 * 28; ++i)
    out += static_cast<char>(i * 7);
  return out;
}

std::string idx_labels(int n) {
  std::string out = be32(0x801) + be32(n);
  for (int i = 0; i < n; ++i)
    out += static_cast<char>(i % 10);
  return out;
}

std::string jpeg(int seed) {
  cv::Mat image(64, 64, CV_8UC3, cv::Scalar(seed, 2 * seed, 255 - seed));
  std::vector<uchar> bytes;
  cv::imencode(".jpg", image, bytes);
  return std::string(bytes.begin(), bytes.end());
}

class DatasetDownloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_download_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    archive_ = fuzz::make_archive(ArchiveFormat::kTarGz, cifar10_entries());
    server_.serve("/cifar-10-binary.tar.gz", archive_);
    data_.dataset = DatasetKind::kCifar10;
    data_.root = (dir_ / "cifar-10-batches-bin").string();
    data_.url = server_.url("/cifar-10-binary.tar.gz");
    data_.sha256 = sha256_of(archive_);
  }
  void TearDown() override {
    ::chmod(dir_.c_str(), 0755);
    fs::remove_all(dir_);
  }

  fs::path root() const { return data_.root; }
  fs::path staging() const { return dir_ / ".vit-download-cifar-10-batches-bin"; }
  // Neither data.root nor the download folder beside it.
  void expect_nothing_left() const {
    EXPECT_FALSE(fs::exists(root()));
    EXPECT_FALSE(fs::exists(staging()));
  }
  // The official CIFAR-10 files, written straight into `folder`.
  void write_unpacked_copy(const fs::path& folder) const {
    fs::create_directories(folder);
    for (const auto& e : cifar10_entries())
      if (e.type == ArchiveEntry::Type::kFile)
        std::ofstream(folder / fs::path(e.path).filename(), std::ios::binary) << e.data;
  }
  // `vit data --json` (with --download when asked) on data.root = `folder`.
  nlohmann::json vit_data_json(const fs::path& folder, bool download) {
    cli::Cli cli;
    auto options = cli::register_data(cli);
    std::vector<std::string> args = {"data",
                                     "--config",
                                     std::string(VIT_SOURCE_DIR) + "/configs/cifar10.json",
                                     "--set",
                                     "data.root=" + folder.string(),
                                     "--set",
                                     "data.val_size=10",
                                     "--set",
                                     "data.url=" + data_.url,
                                     "--set",
                                     "data.sha256=" + data_.sha256,
                                     "--json",
                                     "--device",
                                     "cpu",
                                     "-q"};
    if (download) args.push_back("--download");
    cli.parse(args);
    ::testing::internal::CaptureStdout();
    EXPECT_EQ(cli.run(), 0);
    return nlohmann::json::parse(::testing::internal::GetCapturedStdout());
  }
  // The vit binary under /bin/sh (`prefix` runs first), its exit code and output.
  std::pair<int, std::string> run_vit(const std::string& prefix, const std::string& args) {
    const auto log = dir_ / "vit.log";
    testing::ChildProcess child(
        {"/bin/sh", "-c",
         prefix + " exec " + VIT_BINARY + " data --config " + VIT_SOURCE_DIR +
             "/configs/cifar10.json --device cpu --set data.root=" + root().string() +
             " --set data.url=" + data_.url + " " + args},
        {}, dir_, log);
    const int rc = child.wait(std::chrono::seconds(120));
    return {rc, child.output()};
  }

  fs::path dir_;
  LoopbackHttpServer server_;
  Bytes archive_;
  DataConfig data_;
};

TEST_F(DatasetDownloadTest, VitDataDownloadCountsAsAnUnpackedCopy) {
  const auto downloaded = vit_data_json(root(), /*download=*/true);
  write_unpacked_copy(dir_ / "copy");
  const auto copy = vit_data_json(dir_ / "copy", /*download=*/false);
  EXPECT_EQ(downloaded.at("train"), 5 * kTrainPerBatch - 10);
  EXPECT_EQ(downloaded.at("val"), 10);
  EXPECT_EQ(downloaded.at("test"), kTest);
  for (const char* key : {"train", "val", "test", "classes", "image_shape"})
    EXPECT_EQ(downloaded.at(key), copy.at(key)) << key;
  ASSERT_EQ(server_.requests().size(), 1u);
  EXPECT_EQ(server_.requests()[0].range, "");
  EXPECT_FALSE(fs::exists(staging()));
  EXPECT_FALSE(fs::exists(root() / kCifarTop));  // the top folder's contents are data.root
  EXPECT_EQ(read_dataset(data_, vit::ModelConfig{}, /*seed=*/0).train.size(), 5 * kTrainPerBatch);
}

TEST_F(DatasetDownloadTest, CompleteDataIsLeftAloneAndNothingIsFetched) {
  write_unpacked_copy(root());
  const auto before = fs::last_write_time(root() / "test_batch.bin");
  EXPECT_FALSE(download_dataset(data_));
  EXPECT_TRUE(server_.requests().empty());
  EXPECT_EQ(fs::last_write_time(root() / "test_batch.bin"), before);
  EXPECT_FALSE(fs::exists(staging()));
}

TEST_F(DatasetDownloadTest, ARefusedConnectionNamesTheUrl) {
  data_.url = "http://127.0.0.1:" + std::to_string(testing::free_tcp_port()) + "/c.tar.gz";
  const auto error = error_of([&] { download_dataset(data_); });
  EXPECT_EQ(error.rfind("cannot download " + data_.url + ": ", 0), 0u) << error;
  EXPECT_NE(error.find("onnect"), std::string::npos)
      << error;  // "Couldn't connect", "Failed to connect"
  EXPECT_EQ(error.find('\n'), std::string::npos);
  expect_nothing_left();
}

TEST_F(DatasetDownloadTest, Http404NamesTheUrl) {
  data_.url = server_.url("/missing.tar.gz");
  EXPECT_EQ(error_of([&] { download_dataset(data_); }),
            "cannot download " + data_.url + ": the server answered HTTP 404");
  expect_nothing_left();
}

TEST_F(DatasetDownloadTest, AChecksumMismatchGivesBothSumsAndDeletesTheFile) {
  const std::string wrong(64, 'a');
  data_.sha256 = wrong;
  EXPECT_EQ(error_of([&] { download_dataset(data_); }),
            "cifar-10-binary.tar.gz from " + data_.url + " is damaged: its SHA-256 is " +
                sha256_of(archive_) + ", expected " + wrong +
                " (the file is deleted; the next run downloads it anew)");
  expect_nothing_left();
}

TEST_F(DatasetDownloadTest, ATruncatedArchiveLeavesNothingBehind) {
  Bytes truncated(archive_.begin(), archive_.begin() + archive_.size() / 2);
  server_.serve("/truncated.tar.gz", truncated);
  data_.url = server_.url("/truncated.tar.gz");
  data_.sha256 = "";  // unverified: the damage shows only when unpacking
  const auto error = error_of([&] { download_dataset(data_); });
  EXPECT_NE(error.find("damaged, truncated or not a tar or zip archive"), std::string::npos)
      << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  expect_nothing_left();
}

TEST_F(DatasetDownloadTest, ACorruptedArchiveLeavesAnEmptyRootAsItWas) {
  // The deflate stream's start, past gzip's 10-byte header: the first tar
  // header comes out damaged (deeper in, a stored block would pass unseen).
  Bytes corrupted = archive_;
  for (size_t i = 10; i < 74; ++i)
    corrupted[i] ^= 0x5a;
  server_.serve("/corrupted.tar.gz", corrupted);
  data_.url = server_.url("/corrupted.tar.gz");
  data_.sha256 = "";
  fs::create_directories(root());
  const auto error = error_of([&] { download_dataset(data_); });
  EXPECT_NE(error.find("damaged, truncated or not a tar or zip archive"), std::string::npos)
      << error;
  EXPECT_TRUE(fs::is_directory(root()));
  EXPECT_TRUE(fs::is_empty(root()));
  EXPECT_FALSE(fs::exists(staging()));
}

TEST_F(DatasetDownloadTest, ResumesWithARangeRequestAfterADroppedConnection) {
  const size_t first = archive_.size() / 3;
  server_.break_off_next("/cifar-10-binary.tar.gz", first);
  const auto error = error_of([&] { download_dataset(data_); });
  EXPECT_EQ(
      error.rfind(
          "download of " + data_.url + " broke off after " + std::to_string(first) + " bytes (", 0),
      0u)
      << error;
  EXPECT_FALSE(fs::exists(root()));
  EXPECT_EQ(fs::file_size(staging() / "cifar-10-binary.tar.gz.part"), first);
  EXPECT_TRUE(download_dataset(data_));
  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].range, "");
  EXPECT_EQ(requests[1].range, "bytes=" + std::to_string(first) + "-");
  EXPECT_EQ(read_dataset(data_, vit::ModelConfig{}, /*seed=*/0).test.size(), kTest);
  EXPECT_FALSE(fs::exists(staging()));
}

TEST_F(DatasetDownloadTest, AnIncompleteRootIsTheUsersAndIsRefused) {
  fs::create_directories(root());
  std::ofstream(root() / "data_batch_1.bin") << "mine";
  EXPECT_EQ(error_of([&] { download_dataset(data_); }),
            "data.root " + root().string() +
                " exists but lacks data_batch_2.bin, so it is not a complete cifar10; vit "
                "downloads only into a missing or empty folder: move it away first");
  EXPECT_TRUE(server_.requests().empty());
  std::ifstream in(root() / "data_batch_1.bin");
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "mine");
}

TEST_F(DatasetDownloadTest, AnArchiveThatEscapesIsRefused) {
  const auto evil =
      fuzz::make_archive(ArchiveFormat::kTarGz, {{std::string(kCifarTop) + "/../../evil", "x"}});
  server_.serve("/evil.tar.gz", evil);
  data_.url = server_.url("/evil.tar.gz");
  data_.sha256 = sha256_of(evil);
  const auto error = error_of([&] { download_dataset(data_); });
  EXPECT_NE(error.find("entry 'cifar-10-batches-bin/../../evil': a path with '..'; refused"),
            std::string::npos)
      << error;
  EXPECT_FALSE(fs::exists(dir_ / "evil"));
  EXPECT_FALSE(fs::exists(dir_.parent_path() / "evil"));
  EXPECT_FALSE(fs::exists(root()));
}

TEST_F(DatasetDownloadTest, MnistFilesComeFromABaseUrlAndAreChecked) {
  const std::vector<std::pair<std::string, std::string>> files = {
      {"train-images-idx3-ubyte.gz", idx_images(30)},
      {"train-labels-idx1-ubyte.gz", idx_labels(30)},
      {"t10k-images-idx3-ubyte.gz", idx_images(12)},
      {"t10k-labels-idx1-ubyte.gz", idx_labels(12)}};
  std::string sums;
  for (const auto& [name, content] : files) {
    const auto gz = gzip(content);
    server_.serve("/mnist/" + name, gz);
    sums += (sums.empty() ? "" : ",") + sha256_of(gz);
  }
  DataConfig mnist;
  mnist.dataset = DatasetKind::kMnist;
  mnist.root = (dir_ / "mnist").string();
  mnist.url = server_.url("/mnist");  // the file names are appended after a '/'
  mnist.sha256 = sums;
  EXPECT_TRUE(download_dataset(mnist));
  const auto loaded = read_dataset(mnist, vit::ModelConfig{}, /*seed=*/0);
  EXPECT_EQ(loaded.train.size(), 30);
  EXPECT_EQ(loaded.test.size(), 12);
  EXPECT_EQ(server_.requests().size(), 4u);
  EXPECT_EQ(server_.requests()[0].path, "/mnist/train-images-idx3-ubyte.gz");
  EXPECT_FALSE(fs::exists(dir_ / ".vit-download-mnist"));
  mnist.sha256 = sums.substr(0, 64);
  mnist.root = (dir_ / "mnist2").string();
  EXPECT_EQ(error_of([&] { download_dataset(mnist); }),
            "data.sha256 holds 1 checksum(s), expected 4 (one per file that mnist downloads "
            "from data.url)");
}

TEST_F(DatasetDownloadTest, TinyImagenetUnpacksFromItsZip) {
  const std::string top = "tiny-imagenet-200/";
  std::vector<ArchiveEntry> entries = {{top + "wnids.txt", "n01\nn02\n"},
                                       {top + "words.txt", "n01\tgoldfish\nn02\tsalamander\n"}};
  for (const char* wnid : {"n01", "n02"})
    for (int i = 0; i < 3; ++i)
      entries.push_back(
          {top + "train/" + wnid + "/images/" + wnid + "_" + std::to_string(i) + ".JPEG",
           jpeg(40 * i + (wnid[2] - '0'))});
  entries.push_back({top + "val/val_annotations.txt",
                     "val_0.JPEG\tn01\t0\t0\t63\t63\nval_1.JPEG\tn02\t0\t0\t63\t63\n"});
  entries.push_back({top + "val/images/val_0.JPEG", jpeg(7)});
  entries.push_back({top + "val/images/val_1.JPEG", jpeg(9)});
  const auto zip = fuzz::make_archive(ArchiveFormat::kZip, entries);
  server_.serve("/tiny-imagenet-200.zip", zip);
  DataConfig tiny;
  tiny.dataset = DatasetKind::kTinyImagenet;
  tiny.root = (dir_ / "tiny-imagenet-200").string();
  tiny.url = server_.url("/tiny-imagenet-200.zip");
  tiny.sha256 = sha256_of(zip);
  tiny.cache_dir = (dir_ / "cache").string();
  EXPECT_TRUE(download_dataset(tiny));
  const auto loaded = read_dataset(tiny, vit::ModelConfig{}, /*seed=*/0);
  EXPECT_EQ(loaded.train.size(), 6);
  EXPECT_EQ(loaded.test.size(), 2);
  EXPECT_EQ(loaded.train.classes, (std::vector<std::string>{"goldfish", "salamander"}));
}

TEST_F(DatasetDownloadTest, AnUnverifiedDownloadPrintsItsSha256AndWarns) {
  const auto [rc, output] = run_vit("", "--download --set data.val_size=10");
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("cifar-10-binary.tar.gz from " + data_.url +
                        " was not verified: its SHA-256 is " + sha256_of(archive_) +
                        " (give it as data.sha256 to check it)"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("train         90 images"), std::string::npos) << output;
}

TEST_F(DatasetDownloadTest, AFullDiskIsAOneLineErrorAndLeavesNoDataset) {
  // The shell's file size limit (512-byte blocks) stands in for a full disk:
  // the write fails with EFBIG as it would with ENOSPC; SIGXFSZ is ignored.
  ASSERT_GT(archive_.size(), 200'000u);
  const auto [rc, output] =
      run_vit("trap '' XFSZ; ulimit -f 100;", "--download --set data.sha256=" + data_.sha256);
  EXPECT_EQ(rc, 1) << output;
  EXPECT_NE(output.find("cannot write " + (staging() / "cifar-10-binary.tar.gz.part").string() +
                        " (File too large)"),
            std::string::npos)
      << output;
  EXPECT_FALSE(fs::exists(root()));
}

TEST_F(DatasetDownloadTest, AnUnwritableFolderIsAOneLineError) {
  // A folder that only root may write; the child runs as nobody when the test
  // runs as root (who may write anywhere).
  const fs::path locked = dir_ / "locked";
  fs::create_directories(locked);
  ::chmod(locked.c_str(), 0555);
  data_.root = (locked / "cifar").string();
  const testing::OtherUser user =
      testing::as_other_user(dir_, {std::string(VIT_SOURCE_DIR) + "/configs/cifar10.json"});
  if (!user.cannot.empty()) GTEST_SKIP() << user.cannot;
  const std::string prefix = user.prefix, vit = user.vit, config = user.files[0];
  const auto log = dir_ / "vit.log";
  testing::ChildProcess child({"/bin/sh", "-c",
                               prefix + " " + vit + " data --config " + config +
                                   " --device cpu --download --set data.root=" + data_.root +
                                   " --set data.url=" + data_.url},
                              {}, fs::temp_directory_path(), log);
  EXPECT_EQ(child.wait(std::chrono::seconds(60)), 1) << child.output();
  EXPECT_NE(
      child.output().find("cannot download into data.root " + data_.root + ": cannot create " +
                          (locked / ".vit-download-cifar").string() + " (Permission denied)"),
      std::string::npos)
      << child.output();
  EXPECT_TRUE(fs::is_empty(locked));
}

TEST(DatasetArchives, TheTableHoldsThePublishedChecksums) {
  const auto cifar10 = official_archive(DatasetKind::kCifar10);
  ASSERT_TRUE(cifar10);
  EXPECT_EQ(cifar10->base_url + cifar10->files.at(0).name,
            "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz");
  EXPECT_EQ(cifar10->files.at(0).md5, "c32a1d4ab5d03f1284b67883e8d87530");
  EXPECT_EQ(cifar10->top_folder, "cifar-10-batches-bin");
  EXPECT_EQ(official_archive(DatasetKind::kCifar100)->files.at(0).md5,
            "03b5dce01913d631647c71ecec9e9cb8");
  const auto mnist = official_archive(DatasetKind::kMnist);
  ASSERT_EQ(mnist->files.size(), 4u);
  EXPECT_EQ(mnist->files[0].name, "train-images-idx3-ubyte.gz");
  EXPECT_EQ(mnist->files[0].md5, "f68b3c2dcbeaaa9fbdd348bbdeb94873");
  EXPECT_EQ(mnist->files[3].md5, "ec29112dd5afa0611ce80d1b7f02629c");
  EXPECT_EQ(official_archive(DatasetKind::kFashionMnist)->files[0].md5,
            "8d4fb7e6c68d591d4c3dfef9ec88bf0d");
  EXPECT_EQ(official_archive(DatasetKind::kTinyImagenet)->files.at(0).md5,
            "90528d7ca1a48142e341f4ef8d21d0de");
  EXPECT_FALSE(official_archive(DatasetKind::kImageFolder));
}

TEST(DatasetArchives, MissingFileNamesWhatTheReaderNeeds) {
  const fs::path root = fs::temp_directory_path() / ("vit_missing_" + std::to_string(::getpid()));
  fs::create_directories(root);
  EXPECT_EQ(missing_file(DatasetKind::kMnist, root), "train-images-idx3-ubyte[.gz]");
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels.idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte.gz"})
    std::ofstream(root / name) << "x";
  EXPECT_EQ(missing_file(DatasetKind::kMnist, root), "");
  EXPECT_EQ(missing_file(DatasetKind::kCifar100, root), "train.bin");
  EXPECT_EQ(missing_file(DatasetKind::kTinyImagenet, root), "wnids.txt");
  fs::remove_all(root);
}

}  // namespace
}  // namespace vit::data
