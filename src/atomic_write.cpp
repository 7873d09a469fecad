#include "vit/atomic_write.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "vit/error.hpp"

namespace vit {
namespace fs = std::filesystem;

void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write) {
  const fs::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      throw Error(path + ": cannot create folder " + target.parent_path().string() + " (" +
                  ec.message() + ")");
  }
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  const auto discard = [&] {
    std::error_code ignored;
    fs::remove(temp, ignored);
  };
  try {
    write(temp);
  } catch (const std::exception& e) {
    discard();
    const std::string what = e.what();
    throw Error(path + ": write failed (" + what.substr(0, what.find('\n')) + ")");
  }
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    discard();
    throw Error(path + ": cannot replace file (" + ec.message() + ")");
  }
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_atomically(path, [&](const std::string& temp) {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot open " + temp + " for writing");
    out << text;
    out.flush();
    if (!out) throw Error("cannot write " + temp + " (disk full?)");
  });
}

}  // namespace vit
