// The Event and Summary messages are encoded here by hand, a few fields of
// protobuf's wire format, rather than through libprotobuf: that would need
// protoc and TensorFlow's .proto files at build time, and pip's LibTorch
// bundles its own protobuf, whose symbols a second copy in the same process
// can clash with. CRC-32C is a table of 256 entries for the same reason of
// dependencies (the GPU machines lack libcrc32c); the events are a few
// hundred bytes a validation, so its speed does not matter.
#include "vit/io/tensorboard.hpp"

#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "vit/error.hpp"

namespace vit::io {
namespace {

// Wire types of the protobuf encoding.
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// Event fields (tensorflow/core/util/event.proto).
constexpr int kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5,
              kEventSessionLog = 7;
constexpr int kSessionLogStatus = 1, kSessionLogStart = 1;
// Summary fields (tensorflow/core/framework/summary.proto).
constexpr int kSummaryValue = 1;
constexpr int kValueTag = 1, kValueSimpleValue = 2, kValueImage = 4;
constexpr int kImageHeight = 1, kImageWidth = 2, kImageColorspace = 3, kImageEncoded = 4;

// The format is little-endian, as are the x86 and ARM machines vit runs on.
template <typename T>
std::string little_endian_bytes(T value) {
  return std::string(reinterpret_cast<const char*>(&value), sizeof value);
}

// One message being encoded.
class Message {
 public:
  Message& varint(int field, uint64_t value) {
    key(field, kVarint);
    put_varint(value);
    return *this;
  }
  Message& fixed64(int field, double value) {
    key(field, kFixed64);
    bytes_ += little_endian_bytes(value);
    return *this;
  }
  Message& fixed32(int field, float value) {
    key(field, kFixed32);
    bytes_ += little_endian_bytes(value);
    return *this;
  }
  Message& bytes(int field, std::string_view value) {
    key(field, kLengthDelimited);
    put_varint(value.size());
    bytes_.append(value);
    return *this;
  }
  Message& message(int field, const Message& value) { return bytes(field, value.bytes_); }
  const std::string& encoded() const { return bytes_; }

 private:
  void key(int field, int wire_type) { put_varint(static_cast<uint64_t>(field) << 3 | wire_type); }
  void put_varint(uint64_t value) {
    for (; value >= 0x80; value >>= 7)
      bytes_.push_back(static_cast<char>(value | 0x80));
    bytes_.push_back(static_cast<char>(value));
  }
  std::string bytes_;
};

Message event_at(int64_t step) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  Message event;
  event.fixed64(kEventWallTime, now).varint(kEventStep, static_cast<uint64_t>(step));
  return event;
}

std::string summary_event(const Message& value, int64_t step) {
  return event_at(step).message(kEventSummary, Message().message(kSummaryValue, value)).encoded();
}

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') return "localhost";
  return name.data();
}

uint32_t big_endian32(std::string_view bytes, size_t at) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i)
    value = value << 8 | static_cast<uint8_t>(bytes[at + i]);
  return value;
}

// Channels of a PNG colour type (IHDR): grey, RGB, palette (drawn as RGB),
// grey with alpha, RGBA.
int png_channels(uint8_t colour_type) {
  switch (colour_type) {
    case 0:
      return 1;
    case 2:
    case 3:
      return 3;
    case 4:
      return 2;
    case 6:
      return 4;
  }
  return 0;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;  // the reflected Castagnoli polynomial
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (const char byte : data)
    crc = table[(crc ^ static_cast<uint8_t>(byte)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

EventsWriter::EventsWriter(std::string path, CheckedFile::Mode mode)
    : path_(std::move(path)), file_(std::make_unique<CheckedFile>(path_, mode)) {}

EventsWriter EventsWriter::create(const std::string& dir, int64_t first_step) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  EventsWriter writer((std::filesystem::path(dir) / fmt::format("events.out.tfevents.{}.{}.{}",
                                                                seconds, host_name(), ::getpid()))
                          .string(),
                      CheckedFile::Mode::kTruncate);
  writer.write_event(event_at(first_step).bytes(kEventFileVersion, "brain.Event:2").encoded());
  if (first_step > 0)
    writer.write_event(
        event_at(first_step + 1)
            .message(kEventSessionLog, Message().varint(kSessionLogStatus, kSessionLogStart))
            .encoded());
  return writer;
}

EventsWriter EventsWriter::append(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw Error(path + ": no such events file to add to");
  return EventsWriter(path, CheckedFile::Mode::kAppend);
}

void EventsWriter::scalar(const std::string& tag, double value, int64_t step) {
  write_event(summary_event(
      Message().bytes(kValueTag, tag).fixed32(kValueSimpleValue, static_cast<float>(value)), step));
}

void EventsWriter::png_image(const std::string& tag, std::string_view png, int64_t step) {
  // The signature, then the IHDR chunk: width and height (big-endian), bit
  // depth, colour type.
  constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
  if (png.size() < 33 || png.substr(0, 8) != kSignature || png.substr(12, 4) != "IHDR")
    throw Error("image summary '" + tag + "': not a PNG file");
  const int channels = png_channels(static_cast<uint8_t>(png[25]));
  if (channels == 0) throw Error("image summary '" + tag + "': unknown PNG colour type");
  Message image;
  image.varint(kImageHeight, big_endian32(png, 20))
      .varint(kImageWidth, big_endian32(png, 16))
      .varint(kImageColorspace, static_cast<uint64_t>(channels))
      .bytes(kImageEncoded, png);
  write_event(summary_event(Message().bytes(kValueTag, tag).message(kValueImage, image), step));
}

void EventsWriter::write_event(const std::string& event) {
  const std::string length = little_endian_bytes(static_cast<uint64_t>(event.size()));
  std::string record = length;
  record += little_endian_bytes(masked_crc32c(length));
  record += event;
  record += little_endian_bytes(masked_crc32c(event));
  file_->write(record.data(), record.size());  // one write a record: TensorBoard reads as we go
}

}  // namespace vit::io
