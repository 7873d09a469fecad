#pragma once
// How much of the log the terminal shows. --quiet lowers the terminal to
// warnings and errors, while sinks added later (a run's train.log) keep every
// info line.
namespace vit {

// Raises the sinks installed so far (the terminal's) to warnings.
void quiet_terminal();

// False under --quiet, or when the logger itself is set above info.
bool terminal_shows_info();

}  // namespace vit
