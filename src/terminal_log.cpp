#include "vit/terminal_log.hpp"

#include <atomic>

#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

namespace vit {
namespace {

std::atomic<bool> terminal_quiet{false};

}  // namespace

void quiet_terminal() {
  for (auto& sink : spdlog::default_logger()->sinks())
    sink->set_level(spdlog::level::warn);
  terminal_quiet = true;
}

bool terminal_shows_info() {
  return !terminal_quiet && spdlog::default_logger()->should_log(spdlog::level::info);
}

}  // namespace vit
