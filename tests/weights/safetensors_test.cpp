#include "vit/weights/safetensors.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "vit/error.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vit_safetensors_test_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> files_in_dir() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// A file made by hand: the u64 length of `header`, `header` unpadded, then `data_bytes` bytes.
std::vector<uint8_t> raw_file(const std::string& header, size_t data_bytes, uint8_t fill = 0) {
  std::vector<uint8_t> bytes;
  bytes.reserve(8 + header.size() + data_bytes);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i, n >>= 8)
    bytes.push_back(static_cast<uint8_t>(n & 0xff));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data_bytes, fill);
  return bytes;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  return testing::error_of(
      [&] { parse_safetensors(bytes.data(), bytes.size(), "bad.safetensors"); });
}

TEST(SafetensorsDtype, MapsNamesBothWays) {
  EXPECT_EQ(safetensors_dtype("BF16"), torch::kBFloat16);
  EXPECT_EQ(safetensors_dtype("F64"), torch::kDouble);
  EXPECT_EQ(safetensors_dtype_name(torch::kHalf), "F16");
  EXPECT_EQ(safetensors_dtype_name(torch::kBool), "BOOL");
  EXPECT_THROW(safetensors_dtype("F8_E4M3"), Error);
  EXPECT_THROW(safetensors_dtype_name(torch::kComplexFloat), Error);
}

TEST_F(SafetensorsTest, RoundTripKeepsEveryDtypeShapeValueAndMetadata) {
  TensorMap tensors;
  tensors["f32"] = torch::arange(6, torch::kFloat).reshape({2, 3}) - 2.5;
  tensors["f16"] = torch::tensor({0.5, -2.0, 65504.0}).to(torch::kHalf);
  tensors["bf16"] = torch::tensor({1.5, -3.0}).to(torch::kBFloat16);
  tensors["f64"] = torch::tensor({1.0 / 3.0, 1e300}, torch::kDouble);
  tensors["i64"] = torch::tensor({int64_t{-1}, int64_t{1} << 40}, torch::kLong);
  tensors["u8"] = torch::tensor({0, 128, 255}, torch::kByte);
  tensors["scalar"] = torch::tensor(7.25f);
  tensors["empty"] = torch::zeros({0, 4});
  const StringMap metadata = {{"format", "pt"}, {"vit_config", R"({"a": 1})"}, {"\xc3\xa9", "x"}};

  const fs::path path = dir_ / "all.safetensors";
  write_safetensors(path.string(), tensors, metadata);
  const SafetensorsContents back = read_safetensors(path.string());

  EXPECT_EQ(back.metadata, metadata);
  ASSERT_EQ(back.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    const at::Tensor& b = back.tensors.at(name);
    EXPECT_EQ(b.scalar_type(), t.scalar_type());
    EXPECT_EQ(b.sizes(), t.sizes());
    EXPECT_TRUE(b.is_contiguous());
    EXPECT_TRUE(torch::equal(b, t));
  }
  EXPECT_EQ(back.tensors.at("scalar").dim(), 0);
  EXPECT_EQ(back.tensors.at("scalar").item<float>(), 7.25f);
  // The file on disk is exactly the in-memory serialisation, and parses the same.
  EXPECT_EQ(read_bytes(path), serialize_safetensors(tensors, metadata));
  const auto bytes = read_bytes(path);
  const auto parsed = parse_safetensors(bytes.data(), bytes.size(), "mem");
  EXPECT_TRUE(torch::equal(parsed.tensors.at("f64"), tensors.at("f64")));
  EXPECT_EQ(files_in_dir(), std::vector<std::string>{"all.safetensors"});  // no temp left
}

TEST(SafetensorsLayout, MatchesTheOfficialWriterByteForByte) {
  // "a" (F16) sorts first by name, but the larger F32 element goes first in the data.
  const TensorMap tensors = {{"a", torch::tensor({1.0}).to(torch::kHalf)},
                             {"b", torch::tensor({1.0f, 2.0f})}};
  const auto bytes = serialize_safetensors(tensors, {{"k", "v"}});
  const std::string json =
      R"({"__metadata__":{"k":"v"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F16","shape":[1],"data_offsets":[8,10]}})";
  ASSERT_EQ(json.size(), 133u);  // padded with 3 spaces to 136
  const std::string header = json + "   ";
  std::vector<uint8_t> expected = {136, 0, 0, 0, 0, 0, 0, 0};
  expected.insert(expected.end(), header.begin(), header.end());
  // 1.0f = 0x3f800000, 2.0f = 0x40000000, half 1.0 = 0x3c00, all little-endian.
  for (uint8_t b : {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40, 0x00, 0x3c}) {
    expected.push_back(b);
  }
  EXPECT_EQ(bytes, expected);
}

TEST_F(SafetensorsTest, ReadsMisalignedTensors) {
  // The floats start one byte into the data section, behind an unpadded 54-byte header.
  std::vector<uint8_t> bytes =
      raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})", 1);
  const float values[2] = {1.5f, -4.0f};
  const auto* p = reinterpret_cast<const uint8_t*>(values);
  bytes.insert(bytes.end(), p, p + sizeof(values));
  const fs::path path = dir_ / "odd.safetensors";
  write_bytes(path, bytes);
  const auto contents = read_safetensors(path.string());
  EXPECT_TRUE(torch::equal(contents.tensors.at("w"), torch::tensor({1.5f, -4.0f})));
  EXPECT_TRUE(contents.metadata.empty());
  const auto parsed = parse_safetensors(bytes.data(), bytes.size(), "mem");
  EXPECT_TRUE(torch::equal(parsed.tensors.at("w"), torch::tensor({1.5f, -4.0f})));
}

TEST(SafetensorsConvert, ToDtypeConvertsEveryTensor) {
  const TensorMap half = {{"x", torch::tensor({0.5, -2.0}).to(torch::kHalf)},
                          {"y", torch::tensor({3.0}).to(torch::kBFloat16)}};
  const TensorMap f32 = to_dtype(half, torch::kFloat);
  EXPECT_EQ(f32.at("x").scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(f32.at("x"), torch::tensor({0.5f, -2.0f})));
  EXPECT_TRUE(torch::equal(f32.at("y"), torch::tensor({3.0f})));
}

TEST_F(SafetensorsTest, RejectsTruncatedFilesNamingThePath) {
  const fs::path short_file = dir_ / "short.safetensors";
  write_bytes(short_file, {1, 2, 3, 4, 5});
  try {
    read_safetensors(short_file.string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              short_file.string() + ": file has 5 bytes, too short for the 8-byte header length");
  }
  const fs::path cut = dir_ / "cut.safetensors";
  auto bytes = raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  bytes.resize(30);  // the header claims 54 bytes
  write_bytes(cut, bytes);
  try {
    read_safetensors(cut.string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              cut.string() + ": header length 54 runs past the end of the 30-byte file");
  }
  EXPECT_THROW(read_safetensors((dir_ / "missing.safetensors").string()), Error);
  EXPECT_THROW(read_safetensors(dir_.string()), Error);
}

struct BadHeader {
  const char* what;
  std::string header;
  size_t data_bytes;
  std::string message;  // expected substring
};

TEST(SafetensorsValidation, RejectsEachMalformedHeaderWithItsMessage) {
  const std::vector<BadHeader> cases = {
      {"offsets out of bounds", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4,
       "bad.safetensors: tensor 'w' data_offsets [0, 8] run past the end of the 4-byte data "
       "section"},
      {"overlap",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, "bad.safetensors: tensors 'a' data_offsets [0, 8] and 'b' data_offsets [4, 12] overlap"},
      {"shape vs offsets",
       R"({"head.weight":{"dtype":"F32","shape":[10,20],"data_offsets":[0,400]}})", 400,
       "bad.safetensors: tensor 'head.weight' data_offsets [0, 400] hold 400 bytes but shape "
       "[10, 20] of F32 needs 800"},
      {"unknown dtype", R"({"w":{"dtype":"F12","shape":[1],"data_offsets":[0,4]}})", 4,
       "bad.safetensors: tensor 'w' has unknown dtype 'F12' (supported: F64, F32, F16, BF16, I64, "
       "I32, I16, I8, U8, BOOL)"},
      {"bad JSON", R"({"w": {"dtype": )", 0, "bad.safetensors: header is not valid JSON ("},
      {"not an object", "[1, 2]", 0,
       "bad.safetensors: header is a JSON array, expected a JSON object of tensors"},
      {"metadata not strings", R"({"__metadata__":{"epoch":3}})", 0,
       "bad.safetensors: __metadata__ 'epoch' is 3, expected a string"},
      {"metadata not an object", R"({"__metadata__":["a"]})", 0,
       "bad.safetensors: __metadata__ is a JSON array, expected an object of string values"},
      {"entry not an object", R"({"w":"F32"})", 0,
       "tensor 'w' is a JSON string, expected an object with dtype, shape and data_offsets"},
      {"missing field", R"({"w":{"dtype":"F32","shape":[1]}})", 4,
       "tensor 'w' has no \"data_offsets\""},
      {"dtype not a string", R"({"w":{"dtype":4,"shape":[1],"data_offsets":[0,4]}})", 4,
       "tensor 'w' dtype is 4, expected a string"},
      {"negative dim", R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4,
       "tensor 'w' shape[0] is -1, expected a non-negative integer"},
      {"fractional dim", R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4,
       "tensor 'w' shape[0] is 1.5, expected a non-negative integer"},
      {"shape not an array", R"({"w":{"dtype":"F32","shape":{},"data_offsets":[0,4]}})", 4,
       "tensor 'w' shape is a JSON object, expected an array of non-negative integers"},
      {"end before begin", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8,
       "tensor 'w' data_offsets [8, 4] end before they begin"},
      {"three offsets", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 8,
       "tensor 'w' data_offsets is a JSON array, expected [begin, end] (byte counts)"},
      {"negative offset", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 8,
       "tensor 'w' data_offsets is [-4,0], expected [begin, end] (byte counts)"},
      {"shape overflows",
       R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", 0,
       "tensor 'w' shape [4611686018427387904, 4] of F32 is too large (more than 2^63 bytes)"},
      {"deep nesting", std::string(40, '[') + std::string(40, ']'), 0,
       "bad.safetensors: header JSON nests deeper than 16 levels at byte 24"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string message = error_of(raw_file(c.header, c.data_bytes));
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
  }
}

TEST(SafetensorsValidation, RejectsAHeaderLengthAboveTheCap) {
  std::vector<uint8_t> bytes(16, 0);
  bytes[0] = 0x00;
  bytes[1] = 0xca;
  bytes[2] = 0x9a;
  bytes[3] = 0x3b;  // 1,000,000,000 little-endian
  EXPECT_EQ(error_of(bytes),
            "bad.safetensors: header length 1000000000 exceeds the limit of 100000000 bytes");
}

TEST(SafetensorsValidation, AcceptsEmptyTensorsAndGapsBetweenTensors) {
  // Zero-byte tensors may share an offset; unused bytes between tensors are allowed.
  const std::string header = R"({"e1":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                             R"("e2":{"dtype":"F64","shape":[3,0],"data_offsets":[4,4]},)"
                             R"("w":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}})";
  const auto bytes = raw_file(header, 8, /*fill=*/9);
  const auto contents = parse_safetensors(bytes.data(), bytes.size(), "gaps");
  EXPECT_EQ(contents.tensors.at("e2").sizes(), (std::vector<int64_t>{3, 0}));
  EXPECT_TRUE(torch::equal(contents.tensors.at("w"), torch::tensor({9, 9}, torch::kByte)));
}

TEST_F(SafetensorsTest, AFailedWriteNamesThePathAndLeavesNothingBehind) {
  const TensorMap tensors = {{"w", torch::ones({2})}};
  // A file where the folder should be: the folder cannot be made.
  std::ofstream(dir_ / "a_file") << "x";
  const std::string under_a_file = (dir_ / "a_file" / "w.safetensors").string();
  try {
    write_safetensors(under_a_file, tensors);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  under_a_file + ": cannot create folder " + (dir_ / "a_file").string() + " (", 0),
              0u)
        << e.what();
  }
  // A folder in the way: the rename fails and the temporary file is removed.
  fs::create_directories(dir_ / "taken.safetensors" / "inside");
  const std::string taken = (dir_ / "taken.safetensors").string();
  try {
    write_safetensors(taken, tensors);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(taken + ": cannot replace file ("), std::string::npos)
        << e.what();
  }
  const std::string complex = (dir_ / "c.safetensors").string();
  try {
    write_safetensors(complex, {{"z", torch::zeros({1}, torch::kComplexFloat)}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(complex + ": tensor 'z' has dtype ComplexFloat"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(files_in_dir(), (std::vector<std::string>{"a_file", "taken.safetensors"}));
}

TEST_F(SafetensorsTest, WriteReplacesAnExistingFile) {
  const std::string path = (dir_ / "w.safetensors").string();
  write_safetensors(path, {{"old", torch::zeros({100})}});
  write_safetensors(path, {{"new", torch::full({1}, 3.0)}});
  const auto contents = read_safetensors(path);
  ASSERT_EQ(contents.tensors.size(), 1u);
  EXPECT_EQ(contents.tensors.at("new").item<float>(), 3.0f);
  EXPECT_EQ(files_in_dir(), std::vector<std::string>{"w.safetensors"});
}

}  // namespace
}  // namespace vit
