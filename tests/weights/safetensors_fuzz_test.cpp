// Randomised bytes against the safetensors reader: every input must either
// parse or throw vit::Error. A crash, an out-of-bounds read (under ASan) or any
// other exception fails the test. The seeds and the iteration counts are
// fixed, so a failure reproduces.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "vit/error.hpp"
#include "vit/weights/safetensors.hpp"

namespace vit {
namespace {

constexpr int kIterations = 20000;  // about half a second
constexpr uint64_t kSeed = 20240611;
// read_safetensors takes its own path (file size from seekg, chunked reads,
// tensors sharing one buffer); each input costs a file write, so fewer.
constexpr int kFileIterations = 600;
constexpr uint64_t kFileSeed = 20240612;

class Mutator {
 public:
  explicit Mutator(const std::vector<uint8_t>& valid, uint64_t seed = kSeed)
      : valid_(valid), rng_(seed) {}

  std::vector<uint8_t> next(int strategy) {
    switch (strategy) {
      case 0:
        return flip_bytes();
      case 1:
        return with_length(valid_, random_length());
      case 2:
        return truncated();
      case 3:
        return garbage();
      default:
        return random_header();
    }
  }

 private:
  uint64_t pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }

  // A few random bytes of the valid file changed, mostly inside the JSON.
  std::vector<uint8_t> flip_bytes() {
    std::vector<uint8_t> bytes = valid_;
    const uint64_t header_end = std::min<uint64_t>(bytes.size(), 8 + bytes[0] + 256 * bytes[1]);
    for (uint64_t k = 0, n = 1 + pick(4); k < n; ++k) {
      const uint64_t at = pick(2) ? pick(header_end) : pick(bytes.size());
      bytes[at] = pick(3) ? static_cast<uint8_t>(pick(256))
                          : static_cast<uint8_t>("0123456789[]{},\":-"[pick(18)]);
    }
    return bytes;
  }

  uint64_t random_length() {
    const uint64_t real = valid_[0] + 256 * valid_[1];
    switch (pick(4)) {
      case 0:
        return real + pick(16) - 8;
      case 1:
        return pick(valid_.size() + 16);
      case 2:
        return ~uint64_t{0} - pick(16);
      default:
        return rng_();
    }
  }

  static std::vector<uint8_t> with_length(std::vector<uint8_t> bytes, uint64_t n) {
    for (int i = 0; i < 8 && i < static_cast<int>(bytes.size()); ++i, n >>= 8) {
      bytes[i] = static_cast<uint8_t>(n & 0xff);
    }
    return bytes;
  }

  std::vector<uint8_t> truncated() {
    return {valid_.begin(), valid_.begin() + static_cast<std::ptrdiff_t>(pick(valid_.size()))};
  }

  std::vector<uint8_t> garbage() {
    std::vector<uint8_t> bytes(pick(300));
    for (auto& b : bytes)
      b = static_cast<uint8_t>(pick(256));
    if (bytes.size() >= 8 && pick(2)) bytes = with_length(bytes, pick(bytes.size()));
    return bytes;
  }

  nlohmann::json random_value() {
    switch (pick(8)) {
      case 0:
        return -static_cast<int64_t>(pick(10));
      case 1:
        return pick(40);
      case 2:
        return ~uint64_t{0} - pick(3);
      case 3:
        return 1.5;
      case 4:
        return "F32";
      case 5:
        return nullptr;
      case 6:
        return nlohmann::json::object();
      default:
        return nlohmann::json::array({pick(20), pick(20)});
    }
  }

  // Well-formed JSON describing tensors that mostly fit their offsets, with a
  // few fields given random, often hostile, values; this reaches the checks
  // behind the JSON parser and the path that builds tensors.
  std::vector<uint8_t> random_header() {
    static const char* kDtypeNames[] = {"F32", "F16",     "BF16", "F64", "I64",
                                        "U8",  "F8_E4M3", "",     "f32", "BOOL"};
    static const int kSizes[] = {4, 2, 2, 8, 8, 1, 1, 1, 4, 1};
    nlohmann::json header = nlohmann::json::object();
    uint64_t offset = pick(3);
    for (uint64_t t = 0, n = 1 + pick(4); t < n; ++t) {
      const uint64_t d = pick(10) ? pick(7) : pick(10);
      nlohmann::json shape = nlohmann::json::array();
      uint64_t numel = 1;
      for (uint64_t k = 0, dims = pick(4); k < dims; ++k) {
        shape.push_back(pick(4));
        numel *= shape.back().get<uint64_t>();
      }
      const uint64_t end = offset + numel * kSizes[d];
      nlohmann::json entry = {
          {"dtype", kDtypeNames[d]}, {"shape", shape}, {"data_offsets", {offset, end}}};
      offset = end + pick(2);
      if (pick(3) == 0) {
        const char* key = std::array{"dtype", "shape", "data_offsets"}[pick(3)];
        if (pick(4)) {
          entry[key] = random_value();
        } else {
          entry.erase(key);
        }
      }
      std::string name(1, 't');  // appended, not "t" + ...: g++ 12 warns falsely on that
      name += std::to_string(t);
      header[name] = pick(30) ? entry : random_value();
    }
    if (pick(3) == 0) {
      header["__metadata__"] = pick(2) ? nlohmann::json{{"k", "v"}} : random_value();
    }
    const std::string text = header.dump();
    // The data section is exact, a byte short or a byte long.
    const uint64_t data_size = offset + pick(2) - std::min<uint64_t>(offset, pick(2));
    std::vector<uint8_t> bytes(8 + text.size() + data_size);
    std::copy(text.begin(), text.end(), bytes.begin() + 8);
    for (size_t i = 8 + text.size(); i < bytes.size(); ++i) {
      bytes[i] = static_cast<uint8_t>(pick(256));
    }
    return with_length(std::move(bytes), text.size());
  }

  std::vector<uint8_t> valid_;
  std::mt19937_64 rng_;
};

std::vector<uint8_t> valid_file() {
  const TensorMap tensors = {{"blocks.0.attn.qkv.weight", torch::randn({3, 2})},
                             {"cls_token", torch::randn({1, 1, 2}).to(torch::kHalf)},
                             {"pos", torch::arange(4, torch::kLong)},
                             {"scalar", torch::tensor(1.0, torch::kDouble)}};
  return serialize_safetensors(tensors, {{"format", "pt"}});
}

// The tensor's bytes, compared with memcmp: NaN payloads from random bytes
// would make a value comparison fail on identical data.
bool same_bytes(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const auto n = static_cast<size_t>(a.numel() * a.element_size());
  return n == 0 || std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), n) == 0;
}

TEST(SafetensorsFuzz, EveryInputParsesOrThrowsVitError) {
  const std::vector<uint8_t> valid = valid_file();
  ASSERT_LT(valid[0] + 256 * valid[1], 512);  // the mutator reads the length from two bytes
  Mutator mutator(valid);

  int parsed = 0, rejected = 0;
  for (int i = 0; i < kIterations; ++i) {
    const std::vector<uint8_t> bytes = mutator.next(i % 5);
    try {
      const SafetensorsContents c = parse_safetensors(bytes.data(), bytes.size(), "fuzz");
      for (const auto& [name, t] : c.tensors) {
        ASSERT_LE(static_cast<size_t>(t.numel() * t.element_size()), bytes.size()) << name;
      }
      ++parsed;
    } catch (const Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      FAIL() << "iteration " << i << ": not a vit::Error: " << e.what();
    }
  }
  std::printf("[ fuzz     ] %d parsed, %d rejected\n", parsed, rejected);
  // Both outcomes occur, so the mutations reach past the first check and the
  // accepting path runs on odd inputs too.
  EXPECT_EQ(parsed + rejected, kIterations);
  EXPECT_GT(parsed, 800);
  EXPECT_GT(rejected, 10000);
}

// The same mutations written to a file for read_safetensors: it must throw
// only vit::Error too, and agree with parse_safetensors on the same bytes,
// accepting the same inputs with the same tensors and rejecting the others
// with the same message.
TEST(SafetensorsFuzz, EveryFileReadsOrThrowsVitErrorLikeTheBytes) {
  const std::vector<uint8_t> valid = valid_file();
  Mutator mutator(valid, kFileSeed);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("vit_safetensors_fuzz_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "fuzz.safetensors").string();

  int parsed = 0, rejected = 0;
  for (int i = 0; i < kFileIterations; ++i) {
    const std::vector<uint8_t> bytes = mutator.next(i % 5);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
      ASSERT_TRUE(out.good()) << path;
    }
    std::string from_bytes = "(parsed)";
    SafetensorsContents expected;
    try {
      expected = parse_safetensors(bytes.data(), bytes.size(), path);
    } catch (const Error& e) {
      from_bytes = e.what();
    }
    try {
      const SafetensorsContents c = read_safetensors(path);
      ASSERT_EQ(from_bytes, "(parsed)") << "iteration " << i << ": only the file was accepted";
      EXPECT_EQ(c.metadata, expected.metadata) << "iteration " << i;
      ASSERT_EQ(c.tensors.size(), expected.tensors.size()) << "iteration " << i;
      for (const auto& [name, t] : c.tensors) {
        ASSERT_EQ(expected.tensors.count(name), 1u) << "iteration " << i << ": " << name;
        EXPECT_TRUE(same_bytes(t, expected.tensors.at(name))) << "iteration " << i << ": " << name;
      }
      ++parsed;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), from_bytes) << "iteration " << i;
      ++rejected;
    } catch (const std::exception& e) {
      FAIL() << "iteration " << i << ": not a vit::Error: " << e.what();
    }
  }
  std::filesystem::remove_all(dir);
  std::printf("[ fuzz     ] %d files read, %d rejected\n", parsed, rejected);
  // Both outcomes occur. Three of the five strategies (a wrong length, a
  // truncated file, garbage) nearly always give an error, so well over 300 of
  // the 600 files are rejected; the parsed floor is the test above's 800 in
  // 20000, scaled down with room for chance.
  EXPECT_EQ(parsed + rejected, kFileIterations);
  EXPECT_GT(parsed, 5);
  EXPECT_GT(rejected, 250);
}

}  // namespace
}  // namespace vit
