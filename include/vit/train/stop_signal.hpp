#pragma once
// Ctrl-C (SIGINT) and SIGTERM ask the trainer to stop after the current step.
// A second signal ends the process at once.
namespace vit {

void install_stop_signal_handlers();
bool stop_requested();
void request_stop();  // what the handler does; also for tests
void clear_stop_request();

}  // namespace vit
