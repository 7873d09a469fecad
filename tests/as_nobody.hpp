#pragma once
// The vit binary run as another user, for the tests of permission errors:
// root reads and writes anything, so when the tests run as root the child
// runs as nobody (setpriv), from copies of the binary and of `files` in a
// folder open to it (a root's clone under /root, 0700, is not).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "vit_test_paths.hpp"

namespace vit::testing {

struct OtherUser {
  std::string prefix;              // "" or the setpriv command that runs as nobody
  std::string vit;                 // the binary to run
  std::vector<std::string> files;  // `files`, or their copies open to nobody
  std::string cannot;              // why it cannot run (then skip the test), or ""
};

// `dir` (a fresh temporary folder) is opened to nobody and holds the copies.
inline OtherUser as_other_user(const std::filesystem::path& dir,
                               const std::vector<std::filesystem::path>& files = {}) {
  namespace fs = std::filesystem;
  OtherUser user{"", VIT_BINARY, {}, ""};
  for (const auto& f : files)
    user.files.push_back(f.string());
  if (::geteuid() != 0) return user;
  if (!fs::exists("/usr/bin/setpriv")) {
    user.cannot = "running as root without setpriv";
    return user;
  }
  user.prefix = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups";
  const fs::path open = dir / "open-to-nobody";
  fs::create_directories(open);
  fs::copy_file(VIT_BINARY, open / "vit");
  const auto world_reads = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec;
  fs::permissions(dir, world_reads);
  fs::permissions(open, world_reads);
  fs::permissions(open / "vit", world_reads);
  user.vit = (open / "vit").string();
  user.files.clear();
  for (const auto& f : files) {
    fs::copy_file(f, open / f.filename());
    fs::permissions(open / f.filename(), world_reads);
    user.files.push_back((open / f.filename()).string());
  }
  // pip's LibTorch lives under the user's home (~/.cache/vit), which nobody
  // may not read: then the binary cannot even start as nobody.
  const std::string starts = user.prefix + " " + user.vit + " --version >/dev/null 2>&1";
  if (std::system(starts.c_str()) != 0)
    user.cannot = "as nobody, a copy of " + std::string(VIT_BINARY) +
                  " cannot start (its libraries are in a folder only root may read)";
  return user;
}

}  // namespace vit::testing
