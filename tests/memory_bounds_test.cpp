// Files whose headers claim far more data than they hold must be refused
// before anything of the claimed size is allocated. Each reader runs in a
// child process whose address space is capped (RLIMIT_AS) at what the test
// process already maps plus kHeadroom, so an allocation of the claimed size
// would fail there instead of passing unnoticed on a large machine.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include "under_asan.hpp"
#include "vit/data/cifar.hpp"
#include "vit/data/idx.hpp"
#include "vit/error.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit/weights/safetensors.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kHeadroom = uint64_t{256} << 20;

uint64_t mapped_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// The vit::Error message that `read` gives in a child under the cap, or what
// happened instead: "(no error)", "(bad_alloc)", "(other exception: ...)",
// "(signal N)".
std::string error_under_memory_cap(const std::function<void()>& read) {
  int fds[2];
  if (::pipe(fds) != 0) return "(no pipe)";
  const uint64_t cap = mapped_bytes() + kHeadroom;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const rlimit limit{cap, cap};
    ::setrlimit(RLIMIT_AS, &limit);
    std::string answer = "(no error)";
    try {
      read();
    } catch (const Error& e) {
      answer = e.what();
    } catch (const std::bad_alloc&) {
      answer = "(bad_alloc)";
    } catch (const std::exception& e) {
      answer = std::string("(other exception: ") + e.what() + ")";
    }
    const ssize_t ignored = ::write(fds[1], answer.data(), answer.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    answer.append(buffer, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "(signal " + std::to_string(WTERMSIG(status)) + ")";
  return answer;
}

class MemoryBounds : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef VIT_UNDER_ASAN
    GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space; RLIMIT_AS cannot apply";
#endif
    dir_ = fs::temp_directory_path() / ("vit-membounds-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

std::string big_endian(std::initializer_list<uint32_t> values) {
  std::string out;
  for (uint32_t v : values)
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>(v >> shift));
  return out;
}

TEST_F(MemoryBounds, AnIdxHeaderClaimingBillionsOfImagesIsRefused) {
  const auto plain = write("images", big_endian({2051, 2'000'000'000, 28, 28}) + "abcd");
  EXPECT_EQ(error_under_memory_cap([&] { data::read_idx_images(plain); }),
            "images: truncated, 4 bytes after the 16-byte header, expected 1568000000000 "
            "(2000000000 x 28 x 28)");
  const std::string gz = (dir_ / "images.gz").string();
  gzFile file = gzopen(gz.c_str(), "wb");
  const std::string header = big_endian({2051, 4'000'000'000u, 255, 255});
  gzwrite(file, header.data(), static_cast<unsigned>(header.size()));
  gzclose(file);
  const std::string size = std::to_string(fs::file_size(gz));
  EXPECT_EQ(error_under_memory_cap([&] { data::read_idx_images(gz); }),
            "images.gz: the header claims 4000000000 x 255 x 255 = 260100000000000 bytes, more "
            "than a gzip file of " +
                size + " bytes can hold");
}

TEST_F(MemoryBounds, ACifarFileTooLargeForMemoryIsAnErrorNotACrash) {
  // Sparse: a million records on paper, nothing on disk. CIFAR has no header,
  // so the size is the claim; the reader must fail cleanly when it cannot hold it.
  const std::string path = write("data_batch_1.bin", "");
  fs::resize_file(path, uint64_t{3073} * 1'000'000);
  EXPECT_EQ(
      error_under_memory_cap([&] { data::read_cifar_file(path, data::CifarKind::kCifar10, {}); }),
      path + ": its 3073000000 bytes do not fit in memory");
}

TEST_F(MemoryBounds, ASafetensorsHeaderClaimingAHugeTensorIsRefused) {
  const std::string json =
      R"({"w":{"dtype":"F32","shape":[1000000,1000000],"data_offsets":[0,4000000000000]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  const std::string path = write("huge.safetensors", bytes + json + std::string(16, '\0'));
  const std::string message = error_under_memory_cap([&] { read_safetensors(path); });
  EXPECT_EQ(message.rfind(path, 0), 0u) << message;
  EXPECT_NE(message.find("4000000000000"), std::string::npos) << message;
}

TEST_F(MemoryBounds, ACheckpointWhoseConfigClaimsAHugeModelIsRefused) {
  CheckpointMeta meta;
  meta.config.model.dim = 8192;
  meta.config.model.heads = 64;
  meta.config.model.mlp_dim = 32768;
  meta.config.model.depth = 1024;
  meta.class_names.resize(10, "c");
  torch::serialize::OutputArchive archive;
  archive.write(kMetaKey, c10::IValue(meta_to_json(meta)));
  const std::string path = (dir_ / "huge.pt").string();
  archive.save_to(path);
  const std::string message = error_under_memory_cap([&] { load_model(path); });
  EXPECT_EQ(message, path + ": its config describes a model of " +
                         std::to_string(count_parameters(meta.config.model)) +
                         " parameters, which cannot fit in the file's " +
                         std::to_string(fs::file_size(path)) + " bytes (4 bytes or more each)");
}

}  // namespace
}  // namespace vit
