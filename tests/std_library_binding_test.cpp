// The executables bind every std:: symbol to the system's libstdc++. pip's
// torch 2.11 wheel exports its own copy of std::filesystem from libtorch.so;
// bound to it, remove_all of a folder with files in it jumped to address 0
// and killed every test that trained (docs/gpu.md, "The crash").
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace vit {
namespace {

namespace fs = std::filesystem;

// The shared object that defines the function at `address`, as the dynamic
// linker bound it for this program.
std::string library_defining(const void* address) {
  Dl_info info{};
  if (::dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "(none)";
  return info.dli_fname;
}

TEST(StdLibraryBinding, FilesystemIsTheSystemLibstdcxx) {
  using RemoveAll = std::uintmax_t (*)(const fs::path&);
  const RemoveAll remove_all = &fs::remove_all;
  const std::string library = library_defining(reinterpret_cast<const void*>(remove_all));
  EXPECT_NE(fs::path(library).filename().string().find("libstdc++"), std::string::npos)
      << "std::filesystem::remove_all is bound to " << library;
}

TEST(StdLibraryBinding, RemoveAllEmptiesAFolderWithFiles) {
  const fs::path dir =
      fs::temp_directory_path() / ("vit_std_binding_" + std::to_string(::getpid()));
  fs::create_directories(dir / "inner");
  std::ofstream(dir / "a.txt") << "a";
  std::ofstream(dir / "inner" / "b.txt") << "b";
  EXPECT_EQ(fs::remove_all(dir), 4u);  // two files, two folders
  EXPECT_FALSE(fs::exists(dir));
}

}  // namespace
}  // namespace vit
