#include "vit/train/training_checkpoint.hpp"

#include <torch/torch.h>

#include <spdlog/spdlog.h>

#include "vit/atomic_write.hpp"
#include "vit/error.hpp"
#include "vit/train/model_ema.hpp"

namespace vit {
namespace {

constexpr const char* kOptimizerKey = "optimizer";
constexpr const char* kCpuRngKey = "rng_cpu";

// The average's archive, or a fresh start from the restored weights.
void restore_average(torch::serialize::InputArchive& archive, ModelEma& ema,
                     const std::string& path) {
  torch::serialize::InputArchive average;
  if (archive.try_read(kModelEmaKey, average)) {
    ema.load(average, path);
    return;
  }
  ema.restart_from_weights();
  spdlog::info("{} holds no average of the weights; train.ema starts from its weights", path);
}

// Module::load would give each parameter the file's storage; the optimizer
// holds the parameters as views of its flat buffer, so the values are read
// into a fresh model and copied over instead.
void load_weights_in_place(VisionTransformer& model, torch::serialize::InputArchive& archive) {
  VisionTransformer stored(model->config());
  stored->load(archive);
  torch::NoGradGuard no_grad;
  const auto from = stored->named_parameters();
  for (auto& p : model->named_parameters())
    p.value().copy_(from[p.key()]);
  const auto buffers = stored->named_buffers();
  for (auto& b : model->named_buffers())
    b.value().copy_(buffers[b.key()]);
}

}  // namespace

void save_training_checkpoint(const std::string& path, VisionTransformer& model,
                              const Optimizer& optimizer, const CheckpointMeta& meta,
                              const ModelEma* ema) {
  write_atomically(path, [&](const std::string& temp) {
    torch::serialize::OutputArchive archive;
    archive.write(kMetaKey, c10::IValue(meta_to_json(meta)));
    torch::serialize::OutputArchive model_archive, optimizer_archive;
    model->save(model_archive);
    archive.write(kModelKey, model_archive);
    optimizer.save(optimizer_archive);
    archive.write(kOptimizerKey, optimizer_archive);
    if (ema) {
      torch::serialize::OutputArchive ema_archive;
      ema->save(ema_archive);
      archive.write(kModelEmaKey, ema_archive);
    }
    archive.write(kCpuRngKey, at::detail::getDefaultCPUGenerator().get_state());
    // LibTorch's own file writer does not check every write, so the archive
    // streams through a CheckedFile. LibTorch calls the writer from its zip
    // code, which an exception must not cross, and a short write is no better:
    // LibTorch 1.13's zip writer then throws again from its destructor, which
    // ends the process. So the first failed write is recorded, every byte is
    // reported as written (the rest are dropped), and the error is thrown once
    // save_to has returned.
    CheckedFile file(temp);
    std::string write_error;
    const auto write = [&](const void* data, size_t size) -> size_t {
      if (!write_error.empty()) return size;
      try {
        file.write(data, size);
      } catch (const Error& e) {
        write_error = e.what();
      }
      return size;
    };
    archive.save_to(write);
    if (!write_error.empty()) throw Error(write_error);
    file.close();
  });
}

CheckpointMeta read_checkpoint_meta(const std::string& path) {
  auto archive = open_checkpoint_archive(path);
  return read_meta_record(archive, path);
}

CheckpointMeta restore_training_checkpoint(const std::string& path, VisionTransformer& model,
                                           Optimizer& optimizer, ModelEma* ema) {
  auto archive = open_checkpoint_archive(path);
  CheckpointMeta meta = read_meta_record(archive, path);
  const auto diffs = architecture_differences(model->config(), meta.config.model);
  if (!diffs.empty())
    throw Error(path + ": the checkpoint's architecture differs from the model's (" +
                diffs.front() + ")");
  try {
    torch::serialize::InputArchive model_archive, optimizer_archive;
    archive.read(kModelKey, model_archive);
    load_weights_in_place(model, model_archive);
    archive.read(kOptimizerKey, optimizer_archive);
    optimizer.load(optimizer_archive, path);
    if (ema) restore_average(archive, *ema, path);
    torch::Tensor rng_state;
    archive.read(kCpuRngKey, rng_state);
    auto generator = at::detail::getDefaultCPUGenerator();
    generator.set_state(rng_state);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(path + ": damaged training state (" + first_line_of(e) + ")");
  }
  return meta;
}

}  // namespace vit
