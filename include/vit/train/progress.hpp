#pragma once
// Training progress for people: a one-line bar redrawn in place on a terminal,
// or a plain log line every few seconds when the output is a file or a pipe.
#include <chrono>
#include <cstdint>
#include <string>

namespace vit {

class Progress {
 public:
  // interactive: draw the bar on stderr; otherwise log every log_every_s seconds.
  Progress(bool interactive, double log_every_s)
      : interactive_(interactive), log_every_s_(log_every_s) {}
  // Detects a terminal on stderr.
  static bool stderr_is_terminal();

  void start_epoch(int64_t epoch, int64_t epochs, int64_t steps_in_epoch, int64_t first_step);
  void update(int64_t step_in_epoch, double loss, double images_per_sec, double lr);
  // Clears the bar before other output.
  void clear();

 private:
  std::string line(int64_t step_in_epoch, double loss, double images_per_sec, double lr,
                   int width) const;
  bool interactive_;
  double log_every_s_;
  int64_t epoch_ = 0, epochs_ = 0, steps_ = 0, first_step_ = 0;
  std::chrono::steady_clock::time_point epoch_start_, last_print_;
  bool drawn_ = false;
};

}  // namespace vit
