// A weights file read through a private mapping: its tensors hold the file's
// values, a write into one never reaches the file, and released pages leave
// the process's resident memory but come back from the file when read again.
#include "vit/weights/mapped_file.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vit/weights/safetensors.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

// VmRSS of this process, in KiB.
int64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

class MappedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    file_ = fs::temp_directory_path() /
            ("vit_mapped_file_test_" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
             ".safetensors");
    // 64 MiB of float32 whose every value is its index mod 1000.
    big_ = torch::arange(16 * 1024 * 1024, torch::kFloat).fmod(1000);
    write_safetensors(file_.string(), {{"big", big_}, {"small", torch::ones({3})}});
  }
  void TearDown() override { fs::remove(file_); }

  fs::path file_;
  at::Tensor big_;
};

TEST_F(MappedFileTest, TheTensorsHoldTheFilesValuesAndAWriteStaysInTheProcess) {
  {
    const auto contents = read_safetensors(file_.string());
    const at::Tensor& big = contents.tensors.at("big");
    EXPECT_TRUE(torch::equal(big, big_));
    EXPECT_TRUE(torch::equal(contents.tensors.at("small"), torch::ones({3})));
    big.fill_(-1);  // copy on write: the file keeps its values
  }
  EXPECT_TRUE(torch::equal(read_safetensors(file_.string()).tensors.at("big"), big_));
}

TEST_F(MappedFileTest, ReleasedPagesLeaveTheResidentSetAndReadBackFromTheFile) {
  const auto contents = read_safetensors(file_.string());
  const at::Tensor& big = contents.tensors.at("big");
  const int64_t before = resident_kib();
  EXPECT_DOUBLE_EQ(big.sum().item<double>(), big_.sum().item<double>());  // touches every page
  const int64_t touched = resident_kib();
  release_mapped_pages(big);
  const int64_t released = resident_kib();
  // 64 MiB = 65,536 KiB came in and went out; 48 MiB of margin for the rest of the process.
  EXPECT_GT(touched - before, 49'152) << before << " " << touched;
  EXPECT_GT(touched - released, 49'152) << touched << " " << released;
  EXPECT_TRUE(torch::equal(big, big_));  // read from the file again
}

TEST_F(MappedFileTest, MemoryThatIsNoMappingIsLeftAlone) {
  const at::Tensor heap = torch::full({4 * 1024 * 1024}, 7.0f);  // 16 MiB, page-spanning
  release_mapped_pages(heap);
  EXPECT_TRUE(torch::equal(heap, torch::full({4 * 1024 * 1024}, 7.0f)));
  release_mapped_pages(at::Tensor());
  const auto contents = read_safetensors(file_.string());
  const at::Tensor copy = contents.tensors.at("big").clone();
  release_mapped_pages(copy);
  EXPECT_TRUE(torch::equal(copy, big_));
}

}  // namespace
}  // namespace vit
