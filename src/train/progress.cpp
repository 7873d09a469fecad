#include "vit/train/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "vit/terminal_log.hpp"

namespace vit {
namespace {

std::string clock_text(double seconds) {
  const auto s = static_cast<int64_t>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{:02}:{:02}", s / 60, s % 60);
}

}  // namespace

bool Progress::stderr_is_terminal() {
  return ::isatty(STDERR_FILENO) == 1;
}

void Progress::start_epoch(int64_t epoch, int64_t epochs, int64_t steps_in_epoch,
                           int64_t first_step) {
  epoch_ = epoch;
  epochs_ = epochs;
  steps_ = steps_in_epoch;
  first_step_ = first_step;
  epoch_start_ = last_print_ = std::chrono::steady_clock::now();
}

std::string Progress::line(int64_t step_in_epoch, double loss, double images_per_sec, double lr,
                           int width) const {
  const double done = steps_ > 0 ? double(step_in_epoch) / double(steps_) : 1.0;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start_).count();
  const int64_t steps_done = step_in_epoch - first_step_;
  const double eta = steps_done > 0 ? elapsed / steps_done * (steps_ - step_in_epoch) : 0.0;
  std::string bar;
  if (width > 0) {
    const int filled = static_cast<int>(done * width);
    bar = "[" + std::string(filled, '#') + std::string(width - filled, '.') + "] ";
  }
  return fmt::format("epoch {}/{} {}{}/{} loss {:.4f} lr {:.2e} {:.0f} img/s eta {}", epoch_ + 1,
                     epochs_, bar, step_in_epoch, steps_, loss, lr, images_per_sec,
                     clock_text(eta));
}

void Progress::update(int64_t step_in_epoch, double loss, double images_per_sec, double lr) {
  const auto now = std::chrono::steady_clock::now();
  if (!terminal_shows_info()) return;
  if (interactive_) {
    // Redrawing every step would cost more than a small model's step.
    if (step_in_epoch != steps_ && now - last_print_ < std::chrono::milliseconds(200)) return;
    std::fprintf(stderr, "\r\033[K%s",
                 line(step_in_epoch, loss, images_per_sec, lr, /*width=*/30).c_str());
    std::fflush(stderr);
    drawn_ = true;
  } else {
    if (now - last_print_ < std::chrono::duration<double>(log_every_s_)) return;
    spdlog::info("{}", line(step_in_epoch, loss, images_per_sec, lr, /*width=*/0));
  }
  last_print_ = now;
}

void Progress::clear() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace vit
