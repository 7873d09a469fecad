#pragma once
// Run folders: runs/<name>-<YYYYmmdd-HHMMSS>/ by default, and the runs/latest
// link that commands without --checkpoint follow.
#include <string>

namespace vit {

// The folder a new run writes to: `out` when given, else
// <runs_root>/<name>-<timestamp> (with -2, -3, ... if that exists already).
std::string new_run_dir(const std::string& name, const std::string& out,
                        const std::string& runs_root = "runs");

// Points <runs_root>/latest at run_dir (a relative symlink when run_dir lies
// inside runs_root), replacing any previous link atomically.
void point_latest_at(const std::string& run_dir, const std::string& runs_root = "runs");

}  // namespace vit
