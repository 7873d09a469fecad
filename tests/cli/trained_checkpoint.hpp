#pragma once
// A tiny trained checkpoint for end-to-end tests of the analysis commands: a
// CIFAR-10 binary fixture in which class k is a bright 8x8 block in cell k of a
// 4x4 layout, and a two-block ViT (16 px images, 4 px patches: a 4x4 grid)
// trained on it for two epochs by vit::Trainer. The checkpoint's data.root
// points at the fixture, so --samples can load the validation split.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "command_list.hpp"
#include "vit/config.hpp"
#include "vit/data/data_splits.hpp"
#include "vit/train/trainer.hpp"

namespace vit::testing {

namespace fs = std::filesystem;

inline void write_block_cifar(const fs::path& root) {
  fs::create_directories(root);
  const auto write_batch = [&](const std::string& name, int records) {
    std::ofstream out(root / name, std::ios::binary);
    for (int i = 0; i < records; ++i) {
      const int label = i % 10;
      out.put(static_cast<char>(label));
      for (int channel = 0; channel < 3; ++channel)
        for (int y = 0; y < 32; ++y)
          for (int x = 0; x < 32; ++x) {
            const bool block = y / 8 == label / 4 && x / 8 == label % 4;
            out.put(static_cast<char>(block ? 220 : 20 + 10 * channel + (i * 7 + x + y) % 30));
          }
    }
  };
  for (int b = 1; b <= 5; ++b)
    write_batch("data_batch_" + std::to_string(b) + ".bin", 20);
  write_batch("test_batch.bin", 10);
}

inline Config block_config(const fs::path& data_root, Pool pool = Pool::kCls) {
  Config c;
  c.name = "blocks";
  c.model.image_size = 16;
  c.model.patch_size = 4;
  c.model.dim = 16;
  c.model.depth = 2;
  c.model.heads = 2;
  c.model.mlp_dim = 32;
  c.model.pool = pool;
  c.data.root = data_root.string();
  c.data.val_size = 20;
  c.data.augment.crop_padding = 0;
  c.data.augment.hflip = false;
  // fp32 on every host: "auto" picks bf16 on CPUs that compute it, and the
  // tests' expected values are fp32's. Tests of other precisions set them.
  c.train.precision = Precision::kFp32;
  c.train.batch_size = 16;
  c.train.epochs = 2;
  c.train.warmup_epochs = 0;
  c.train.early_stop_patience = 0;
  c.analysis.rollout_samples = 6;
  c.analysis.distance_samples = 12;
  c.validate();
  return c;
}

// Trains `config` into run_dir and returns the path of its best.pt.
inline std::string train_tiny_checkpoint(const Config& config, const fs::path& run_dir) {
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);
  Trainer trainer(config, data::load_data(config), c10::kCPU, run_dir.string());
  trainer.fit();
  spdlog::set_level(level);
  return (run_dir / "best.pt").string();
}

// Parses and runs one command in-process, as main() would (but exceptions propagate).
inline int run_vit(const std::vector<std::string>& args) {
  cli::Cli cli;
  cli::register_all_commands(cli);
  cli.parse(args);
  return cli.run();
}

inline nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// How many TensorBoard events files (events.out.tfevents.*) `dir` holds.
inline int events_files_in(const fs::path& dir) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir))
    count += entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  return count;
}

inline std::vector<std::string> read_lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

}  // namespace vit::testing
