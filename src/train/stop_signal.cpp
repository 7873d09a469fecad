#include "vit/train/stop_signal.hpp"

#include <csignal>

namespace vit {
namespace {

volatile std::sig_atomic_t stop_flag = 0;

extern "C" void on_stop_signal(int signal_number) {
  if (stop_flag) {
    std::signal(signal_number, SIG_DFL);  // a second signal: give up waiting
    std::raise(signal_number);
    return;
  }
  stop_flag = 1;
}

}  // namespace

void install_stop_signal_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

bool stop_requested() {
  return stop_flag != 0;
}
void request_stop() {
  stop_flag = 1;
}
void clear_stop_request() {
  stop_flag = 0;
}

}  // namespace vit
