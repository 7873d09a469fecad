// vit outside its checkout: configs by name, --version, `cmake --install`
// into a prefix that trains from another folder, and the Debian package.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <torch/version.h>

#include "vit_test_paths.hpp"

namespace {

namespace fs = std::filesystem;

struct Finished {
  int status;
  std::string output;  // stdout and stderr
};

// Runs a shell command; its exit status and everything it printed.
Finished shell(const std::string& command, const fs::path& log) {
  const int status = std::system((command + " > '" + log.string() + "' 2>&1").c_str());
  std::ifstream in(log);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
          std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>())};
}

class Install : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vit_install_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Finished vit(const std::string& args, const std::string& binary = VIT_BINARY) {
    return shell("cd '" + dir_.string() + "' && '" + binary + "' " + args, dir_ / "out.txt");
  }
  fs::path dir_;
};

TEST_F(Install, AShippedConfigIsTakenByItsName) {
  const Finished list = vit("config --list");
  ASSERT_EQ(list.status, 0) << list.output;
  const std::string file = std::string(VIT_SOURCE_DIR) + "/configs/fashion-mnist.json";
  EXPECT_NE(list.output.find("fashion-mnist "), std::string::npos) << list.output;
  EXPECT_NE(list.output.find(fs::canonical(file).string()), std::string::npos) << list.output;

  for (const char* name : {"fashion-mnist", "fashion-mnist.json"}) {
    const Finished info = vit(std::string("info --config ") + name);
    EXPECT_EQ(info.status, 0) << info.output;
    EXPECT_EQ(info.output.rfind("fashion-mnist: Vision Transformer", 0), 0u) << info.output;
  }
  const Finished unknown = vit("info --config nosuch");
  EXPECT_NE(unknown.status, 0);
  EXPECT_EQ(unknown.output.substr(0, unknown.output.find('\n')),
            "--config: nosuch: no such config file, nor a shipped config of that name (vit "
            "config --list names them)");
  const Finished missing_file = vit("info --config ./nosuch.json");
  EXPECT_EQ(missing_file.output.substr(0, missing_file.output.find('\n')),
            "--config: ./nosuch.json: no such config file");
}

TEST_F(Install, VersionNamesLibTorchCudaAndTheBlas) {
  const Finished version = vit("--version");
  ASSERT_EQ(version.status, 0) << version.output;
  EXPECT_EQ(version.output.rfind("vit 0.1.0\nLibTorch " + std::to_string(TORCH_VERSION_MAJOR) +
                                     "." + std::to_string(TORCH_VERSION_MINOR) + ".",
                                 0),
            0u)
      << version.output;
  for (const char* line : {"\nCUDA: ", "\nBLAS: ", "\nCPU: "})
    EXPECT_NE(version.output.find(line), std::string::npos) << line << " in " << version.output;
  // Debian's LibTorch calls the OpenBLAS that setup.sh selects; pip's has MKL inside.
  EXPECT_NE(version.output.find(TORCH_VERSION_MAJOR < 2 ? "\nBLAS: OpenBLAS " : "\nBLAS: MKL"),
            std::string::npos)
      << version.output;
}

// cmake --install into a prefix: bin/vit finds prefix/share/vit/configs and
// trains the demo's config by name from another folder.
TEST_F(Install, AnInstalledVitTrainsAShippedConfigFromAnyFolder) {
  const fs::path prefix = dir_ / "prefix";
  const Finished install = shell(std::string("'") + VIT_CMAKE + "' --install '" + VIT_BUILD_DIR +
                                     "' --prefix '" + prefix.string() + "'",
                                 dir_ / "install.txt");
  ASSERT_EQ(install.status, 0) << install.output;
  for (const char* file : {"bin/vit", "share/vit/configs/fashion-mnist.json",
                           "share/doc/vit/README.md", "share/doc/vit/docs/config.md"})
    EXPECT_TRUE(fs::is_regular_file(prefix / file)) << file;
  const std::string installed = (prefix / "bin" / "vit").string();
  const Finished list = vit("config --list", installed);
  EXPECT_NE(list.output.find((prefix / "share/vit/configs/fashion-mnist.json").string()),
            std::string::npos)
      << list.output;

  if (!fs::exists("/usr/share/datasets/fashion-mnist"))
    GTEST_SKIP()
        << "no Fashion-MNIST in /usr/share/datasets (apt-get install dataset-fashion-mnist)";
  const Finished train =
      vit("train --config fashion-mnist --set train.epochs=1 --set data.limit_train=512 "
          "--set data.val_size=100 --set data.limit_test=100 --set train.batch_size=64 --out run "
          "--device cpu --threads 1 -q",
          installed);
  EXPECT_EQ(train.status, 0) << train.output;
  EXPECT_TRUE(fs::is_regular_file(dir_ / "run" / "summary.json"));
}

// cpack -G DEB on Debian's LibTorch line: the binary, the configs and the
// docs, and a Depends that names the Debian libraries it runs on.
TEST_F(Install, TheDebianPackageHoldsVitAndNamesItsDependencies) {
  if (!fs::exists(fs::path(VIT_BUILD_DIR) / "CPackConfig.cmake"))
    GTEST_SKIP() << "the package is made on Debian's LibTorch line only";
  const Finished pack = shell(std::string("'") + VIT_CPACK + "' --config '" + VIT_BUILD_DIR +
                                  "/CPackConfig.cmake' -B '" + dir_.string() + "'",
                              dir_ / "cpack.txt");
  ASSERT_EQ(pack.status, 0) << pack.output;
  const fs::path deb = dir_ / "vit_0.1.0_amd64.deb";
  ASSERT_TRUE(fs::is_regular_file(deb)) << pack.output;
  const Finished contents = shell("dpkg-deb -c '" + deb.string() + "'", dir_ / "contents.txt");
  for (const char* file : {"./usr/bin/vit", "./usr/share/vit/configs/fashion-mnist.json",
                           "./usr/share/vit/configs/cifar10.json", "./usr/share/doc/vit/README.md",
                           "./usr/share/doc/vit/docs/training.md"})
    EXPECT_NE(contents.output.find(std::string(file) + "\n"), std::string::npos) << file;
  const Finished control =
      shell("dpkg-deb -f '" + deb.string() + "' Package Depends Recommends", dir_ / "control.txt");
  EXPECT_NE(control.output.find("Package: vit\n"), std::string::npos) << control.output;
  for (const char* package : {"libtorch1.13", "libopenblas0-openmp", "libopencv-core406",
                              "libopencv-imgproc406", "libopencv-imgcodecs406", "libspdlog1.10",
                              "libfmt9", "libcurl4", "libarchive13", "libssl3"})
    EXPECT_NE(control.output.find(package), std::string::npos) << package << "\n" << control.output;
  EXPECT_NE(control.output.find("Recommends: dataset-fashion-mnist"), std::string::npos);
}

}  // namespace
