#pragma once
// TensorBoard's event files (events.out.tfevents.*), written directly: each
// record is a length, the data and two masked CRC-32C checksums, and the data
// is an Event protobuf holding a scalar or a PNG image summary. So a run
// folder opens in TensorBoard beside runs of PyTorch, Lightning or Keras.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "vit/atomic_write.hpp"

namespace vit::io {

// CRC-32C (Castagnoli) of `data`, and TensorBoard's masked form of it.
uint32_t crc32c(std::string_view data);
uint32_t masked_crc32c(std::string_view data);

class EventsWriter {
 public:
  // A new file events.out.tfevents.<seconds>.<host>.<pid> in `dir`, opened
  // with the file-version event. A run resumed from a checkpoint at
  // first_step > 0 also writes TensorBoard's session-start event at
  // first_step + 1: TensorBoard then drops what earlier files recorded after
  // the checkpoint (steps >= the event's), as metrics.jsonl does.
  static EventsWriter create(const std::string& dir, int64_t first_step = 0);
  // An existing events file, to add records at its end.
  static EventsWriter append(const std::string& path);

  const std::string& path() const { return path_; }
  void scalar(const std::string& tag, double value, int64_t step);
  // A PNG file's bytes; its size and channels are read from its header. A
  // vit::Error when the bytes are not a PNG.
  void png_image(const std::string& tag, std::string_view png, int64_t step);

 private:
  EventsWriter(std::string path, CheckedFile::Mode mode);
  void write_event(const std::string& event);  // one record: an encoded Event
  std::string path_;
  std::unique_ptr<CheckedFile> file_;
};

}  // namespace vit::io
