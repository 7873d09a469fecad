#include "vit/data/download/download_progress.hpp"

#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "vit/terminal_log.hpp"

namespace vit::data {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kProgressBarWidth = 30;

}  // namespace

DownloadProgress::DownloadProgress(std::string label, bool interactive, double log_every_s)
    : label_(std::move(label)),
      interactive_(interactive),
      log_every_s_(log_every_s),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

DownloadProgress::~DownloadProgress() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
}

std::string DownloadProgress::line(uint64_t bytes, uint64_t total, bool bar) const {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double speed = seconds > 0 ? double(bytes - first_bytes_) / seconds : 0.0;
  std::string out = label_ + " ";
  if (total > 0) {
    const double done = std::min(1.0, double(bytes) / double(total));
    if (bar) {
      const int filled = static_cast<int>(done * kProgressBarWidth);
      out += "[" + std::string(filled, '#') + std::string(kProgressBarWidth - filled, '.') + "] ";
    }
    out += fmt::format("{:.1f}/{:.1f} MiB ({:.0f}%)", bytes / kMiB, total / kMiB, 100 * done);
  } else {
    out += fmt::format("{:.1f} MiB", bytes / kMiB);
  }
  return out + fmt::format(", {:.1f} MiB/s", speed / kMiB);
}

void DownloadProgress::update(uint64_t bytes, uint64_t total) {
  const auto now = std::chrono::steady_clock::now();
  if (!seen_) {
    seen_ = true;
    first_bytes_ = bytes;
  }
  if (!terminal_shows_info()) return;
  if (interactive_) {
    if (now - last_ < std::chrono::milliseconds(200)) return;
    std::fprintf(stderr, "\r\033[K%s", line(bytes, total, /*bar=*/true).c_str());
    std::fflush(stderr);
    drawn_ = true;
  } else {
    if (now - last_ < std::chrono::duration<double>(log_every_s_)) return;
    spdlog::info("downloading {}", line(bytes, total, /*bar=*/false));
  }
  last_ = now;
}

void DownloadProgress::finish(uint64_t bytes) {
  if (drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
  spdlog::info("downloaded {}", line(bytes, 0, /*bar=*/false));
}

}  // namespace vit::data
