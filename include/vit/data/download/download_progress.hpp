#pragma once
// A download's progress for people: a bar redrawn in place when stderr is a
// terminal, otherwise a log line every few seconds (as training's progress).
#include <chrono>
#include <cstdint>
#include <string>

namespace vit::data {

class DownloadProgress {
 public:
  // label: the file's name; interactive: draw a bar on stderr.
  DownloadProgress(std::string label, bool interactive, double log_every_s = 10.0);
  ~DownloadProgress();
  // bytes: the file's bytes so far (with a resumed part); total: 0 = unknown.
  void update(uint64_t bytes, uint64_t total);
  // Clears the bar, then logs the final size and speed.
  void finish(uint64_t bytes);

 private:
  std::string line(uint64_t bytes, uint64_t total, bool bar) const;
  std::string label_;
  bool interactive_;
  double log_every_s_;
  std::chrono::steady_clock::time_point start_, last_;
  uint64_t first_bytes_ = 0;
  bool seen_ = false, drawn_ = false;
};

}  // namespace vit::data
