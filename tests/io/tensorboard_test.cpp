#include "vit/io/tensorboard.hpp"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "error_of.hpp"
#include "vit/io/image_io.hpp"

namespace vit::io {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

// The records of an events file, each checked against its two masked CRCs.
std::vector<std::string> read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> events;
  size_t at = 0;
  const auto u32 = [&](size_t i) {
    uint32_t v;
    std::memcpy(&v, file.data() + i, 4);
    return v;
  };
  while (at < file.size()) {
    uint64_t length;
    std::memcpy(&length, file.data() + at, 8);
    EXPECT_EQ(u32(at + 8), masked_crc32c(file.substr(at, 8))) << "length CRC at " << at;
    const std::string event = file.substr(at + 12, length);
    EXPECT_EQ(u32(at + 12 + length), masked_crc32c(event)) << "data CRC at " << at;
    events.push_back(event);
    at += 12 + length + 4;
  }
  EXPECT_EQ(at, file.size());
  return events;
}

class EventsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_tensorboard_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// The published check value of CRC-32C, and TensorBoard's mask of it.
TEST(Crc32c, MatchesTheCastagnoliCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(masked_crc32c("123456789"), 0xC78AB0E5u);  // ((c >> 15) | (c << 17)) + 0xA282EAD8
}

TEST_F(EventsFile, StartsWithTheFileVersionThenEncodesScalarsByHand) {
  EventsWriter writer = EventsWriter::create(dir_.string());
  EXPECT_EQ(fs::path(writer.path()).parent_path(), dir_);
  EXPECT_EQ(fs::path(writer.path()).filename().string().rfind("events.out.tfevents.", 0), 0u);
  writer.scalar("loss", 0.5, 7);
  writer.scalar("val_acc", 2.25, 300);

  const auto events = read_events(writer.path());
  ASSERT_EQ(events.size(), 3u);
  // Event: wall_time (field 1, 8 bytes), step (field 2) and the oneof.
  ASSERT_EQ(events[0][0], '\x09');
  EXPECT_EQ(events[0].substr(9), "\x10\x00\x1a\x0d"s + "brain.Event:2");
  // step 7; summary (field 5) { value (1) { tag (1) "loss", simple_value (2) 0.5f } }
  EXPECT_EQ(events[1].substr(9), "\x10\x07\x2a\x0d\x0a\x0b\x0a\x04loss\x15\x00\x00\x00\x3f"s);
  // step 300 is the varint ac 02; 2.25f is 00 00 10 40
  EXPECT_EQ(events[2].substr(9),
            "\x10\xac\x02\x2a\x10\x0a\x0e\x0a\x07val_acc\x15\x00\x00\x10\x40"s);
}

// A run resumed at step 5 tells TensorBoard to drop the older file's records
// from step 6 on: session_log (field 7) { status (1): START (1) } at step 6.
TEST_F(EventsFile, AResumedRunStartsASession) {
  const EventsWriter writer = EventsWriter::create(dir_.string(), /*first_step=*/5);
  const auto events = read_events(writer.path());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].substr(9, 2), "\x10\x05"s);
  EXPECT_EQ(events[1].substr(9), "\x10\x06\x3a\x02\x08\x01"s);
}

TEST_F(EventsFile, AnImageSummaryHoldsThePngWithItsSizeAndChannels) {
  const auto picture = torch::zeros({3, 5, 300}, torch::kUInt8);  // (C, H, W): 300 wide, 5 high
  const std::vector<uint8_t> png = encode_png(picture);
  const std::string bytes(png.begin(), png.end());
  const std::string path = EventsWriter::create(dir_.string()).path();
  EventsWriter::append(path).png_image("curves", bytes, 42);

  const auto events = read_events(path);
  ASSERT_EQ(events.size(), 2u);
  // image (4) { height (1) 5, width (2) 300 = ac 02, colorspace (3) 3, encoded (4) the PNG }
  const std::string image = "\x08\x05\x10\xac\x02\x18\x03\x22"s;
  const std::string& event = events[1];
  const size_t at = event.find(image);
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(event.find("\x0a\x06"s + "curves"), std::string::npos);
  EXPECT_EQ(event.substr(event.size() - bytes.size()), bytes);
}

TEST_F(EventsFile, BadInputIsAOneLineError) {
  EventsWriter writer = EventsWriter::create(dir_.string());
  EXPECT_EQ(
      vit::testing::error_of([&] { writer.png_image("x", "GIF89a not a png at all, really", 1); }),
      "image summary 'x': not a PNG file");
  EXPECT_EQ(vit::testing::error_of([&] { EventsWriter::append((dir_ / "none").string()); }),
            (dir_ / "none").string() + ": no such events file to add to");
}

}  // namespace
}  // namespace vit::io
