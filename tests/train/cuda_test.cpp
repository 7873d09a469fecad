// The GPU path against the CPU one. Every test here needs a CUDA device and
// skips without one (CI has none): run them on a GPU machine with
// `ctest -R Cuda` (scripts/gpu_session.sh does).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "cli/trained_checkpoint.hpp"
#include "process.hpp"
#include "synthetic.hpp"
#include "tensor_values.hpp"
#include "vit/infer/evaluate.hpp"
#include "vit/infer/precision.hpp"
#include "vit/model/weight_substitution.hpp"
#include "vit/train/optimizer.hpp"
#include "vit/train/step_profiler.hpp"
#include "vit/train/trainer.hpp"
#include "vit/train/weight_mirror.hpp"
#include "vit/weights/checkpoint.hpp"
#include "vit_test_paths.hpp"

namespace vit {
namespace {

namespace fs = std::filesystem;

const c10::Device kCuda(c10::kCUDA, 0);

using testing::relative_error;

ModelConfig parity_model() {
  ModelConfig m = testing::texture_config().model;
  m.dim = 32;
  m.depth = 2;
  m.mlp_dim = 64;
  return m;
}

// The same weights on the CPU and on the GPU.
std::pair<VisionTransformer, VisionTransformer> twins(const ModelConfig& m) {
  torch::manual_seed(11);
  VisionTransformer cpu(m), gpu(m);
  torch::NoGradGuard no_grad;
  const auto source = cpu->named_parameters();
  for (auto& p : gpu->named_parameters())
    p.value().copy_(source[p.key()]);
  gpu->to(kCuda);
  return {cpu, gpu};
}

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
    // fp32 parity means fp32 arithmetic: no TF32 in cuBLAS or cuDNN.
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setAllowTF32CuDNN(false);
    dir_ = fs::temp_directory_path() /
           ("vit_cuda_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string run(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(CudaTest, LogitsAttentionAndGradientsMatchTheCpuInFp32) {
  auto [cpu, gpu] = twins(parity_model());
  const auto images = torch::randn({8, 1, 8, 8});
  const auto labels = torch::randint(0, 4, {8}, torch::kInt64);
  const auto on_cpu = cpu->forward_with_attention(images);
  const auto on_gpu = gpu->forward_with_attention(images.to(kCuda));
  EXPECT_LT(relative_error(on_gpu.logits, on_cpu.logits), 1e-5);
  ASSERT_EQ(on_gpu.attention.size(), on_cpu.attention.size());
  for (size_t l = 0; l < on_cpu.attention.size(); ++l)
    EXPECT_LT(relative_error(on_gpu.attention[l], on_cpu.attention[l]), 1e-5) << "layer " << l;
  torch::nn::functional::cross_entropy(cpu->forward(images), labels).backward();
  torch::nn::functional::cross_entropy(gpu->forward(images.to(kCuda)), labels.to(kCuda)).backward();
  const auto cpu_params = cpu->named_parameters();
  for (const auto& p : gpu->named_parameters())
    EXPECT_LT(relative_error(p.value().grad(), cpu_params[p.key()].grad()), 1e-4) << p.key();
}

TEST_F(CudaTest, Bf16LogitsAndGradientsStayNearTheCpuFp32Ones) {
  auto [cpu, gpu] = twins(parity_model());
  const auto images = torch::randn({8, 1, 8, 8});
  const auto labels = torch::randint(0, 4, {8}, torch::kInt64);
  torch::nn::functional::cross_entropy(cpu->forward(images), labels).backward();
  at::Tensor logits;
  {
    AutocastScope autocast(Precision::kBf16, kCuda);
    logits = gpu->forward(images.to(kCuda));
  }
  EXPECT_EQ(logits.scalar_type(), at::kBFloat16);
  EXPECT_LT(relative_error(logits, cpu->forward(images)), 2e-2);
  torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels.to(kCuda)).backward();
  const auto cpu_params = cpu->named_parameters();
  for (const auto& p : gpu->named_parameters())
    EXPECT_LT(relative_error(p.value().grad(), cpu_params[p.key()].grad()), 5e-2) << p.key();
}

// bf16 end to end (train.bf16_activations): every parameter read through its
// bf16 copy, no autocast, so flash attention, LayerNorm and the residual
// stream all run in bf16; still near the CPU's fp32.
TEST_F(CudaTest, Bf16EndToEndLogitsAndGradientsStayNearTheCpuFp32Ones) {
  auto [cpu, gpu] = twins(parity_model());
  auto optimizer = make_optimizer(gpu, testing::texture_config().train);
  WeightMirror mirror(gpu, *optimizer, torch::kBFloat16, MirrorScope::kAllParameters);
  const auto images = torch::randn({8, 1, 8, 8});
  const auto labels = torch::randint(0, 4, {8}, torch::kInt64);
  torch::nn::functional::cross_entropy(cpu->forward(images), labels).backward();
  optimizer->zero_grad();
  mirror.refresh();
  at::Tensor logits;
  {
    WeightSubstitution substitution(mirror.substitutes());
    logits = gpu->forward(images.to(kCuda, torch::kBFloat16));
  }
  EXPECT_EQ(logits.scalar_type(), at::kBFloat16);
  EXPECT_LT(relative_error(logits, cpu->forward(images)), 2e-2);
  torch::nn::functional::cross_entropy(logits.to(torch::kFloat), labels.to(kCuda)).backward();
  // No fp32 parameter took part in the forward pass: until the copies'
  // gradients are collected, the optimizer's are still zero_grad's zeros.
  EXPECT_EQ(optimizer->gradients().abs().sum().item<float>(), 0.0f);
  mirror.collect_gradients();
  const auto cpu_params = cpu->named_parameters();
  for (const auto& p : gpu->named_parameters())
    EXPECT_LT(relative_error(p.value().grad(), cpu_params[p.key()].grad()), 5e-2) << p.key();
}

// Both low precisions learn the textures as well as fp32 does on the CPU
// (TrainerTest.LossFallsAndAccuracyRisesAboveChance), bf16 end to end and
// under autocast, fp16 through its loss scaler, all with the step replayed
// from a CUDA graph.
TEST_F(CudaTest, Bf16AndFp16TrainingLearns) {
  for (const auto& [precision, bf16_activations] :
       {std::pair{Precision::kBf16, true}, std::pair{Precision::kBf16, false},
        std::pair{Precision::kFp16, true}}) {
    const std::string name =
        std::string(enum_name(precision)) + (bf16_activations ? "" : "-autocast");
    Config c = testing::texture_config();
    c.train.precision = precision;
    c.train.bf16_activations = bf16_activations;
    Trainer trainer(c, testing::texture_splits(), kCuda, run(name));
    const TrainSummary s = trainer.fit();
    EXPECT_EQ(s.stop_reason, StopReason::kEpochsDone) << name;
    EXPECT_GT(s.best_val_acc, 0.9) << name;
    ASSERT_TRUE(s.test.has_value());
    EXPECT_GT(s.test->accuracy, 0.9) << name;
    EXPECT_GT(trainer.cuda_graph_replays(), 60) << name;  // 72 steps, 3 eager
  }
}

// Replaying the captured step is the same training as running it eagerly.
TEST_F(CudaTest, TheCudaGraphTrainsLikeTheEagerStep) {
  Config graphed = testing::texture_config(), eager = graphed;
  eager.train.cuda_graph = false;
  Trainer a(graphed, testing::texture_splits(), kCuda, run("graph"));
  Trainer b(eager, testing::texture_splits(), kCuda, run("eager"));
  const TrainSummary with_graph = a.fit(), without = b.fit();
  EXPECT_EQ(a.cuda_graph_replays(), with_graph.steps - 3);
  EXPECT_EQ(b.cuda_graph_replays(), 0);
  ASSERT_TRUE(with_graph.test && without.test);
  EXPECT_NEAR(with_graph.test->loss, without.test->loss, 1e-4);
  const auto other = b.model()->named_parameters();
  for (const auto& p : a.model()->named_parameters())
    EXPECT_LT(relative_error(p.value(), other[p.key()]), 1e-4) << p.key();
}

// Micro-batches, every block checkpointed and the weights' average on the
// GPU: the captured step (both micro-batches and the blocks' recompute in one
// graph) trains as the eager one does, and so does the average, updated after
// each replay. With drop-path the recompute must read the generator's state,
// so the step runs eagerly.
TEST_F(CudaTest, MicroBatchesCheckpointingAndTheAverageTrainInTheGraphAsEagerly) {
  Config graphed = testing::texture_config();
  graphed.model.depth = 2;
  graphed.train.epochs = 3;
  graphed.train.accum_steps = 2;
  graphed.train.grad_checkpointing.every = 1;
  graphed.train.ema = ModelEmaConfig{0.9, /*warmup=*/true, /*select_best=*/true};
  Config eager = graphed;
  eager.train.cuda_graph = false;
  Trainer a(graphed, testing::texture_splits(), kCuda, run("graph"));
  Trainer b(eager, testing::texture_splits(), kCuda, run("eager"));
  const TrainSummary with_graph = a.fit(), without = b.fit();
  EXPECT_EQ(with_graph.steps, 3 * 12);  // 192 images / 16 a step
  EXPECT_EQ(a.cuda_graph_replays(), with_graph.steps - 3);
  EXPECT_EQ(b.cuda_graph_replays(), 0);
  // Same kernels on the same shapes, so the two differ by the order of
  // a few reductions at most: 1e-4 as for the plain step above.
  const auto other = b.model()->named_parameters();
  for (const auto& p : a.model()->named_parameters())
    EXPECT_LT(relative_error(p.value(), other[p.key()]), 1e-4) << p.key();
  const auto average = load_model_average(run("graph") + "/last.pt");
  const auto eager_average =
      load_model_average(run("eager") + "/last.pt").model->named_parameters();
  for (const auto& p : average.model->named_parameters())
    EXPECT_LT(relative_error(p.value(), eager_average[p.key()]), 1e-4) << p.key();

  Config dropping = graphed;
  dropping.model.drop_path = 0.1;
  Trainer c(dropping, testing::texture_splits(), kCuda, run("drop-path"));
  EXPECT_EQ(c.fit().steps, 3 * 12);
  EXPECT_EQ(c.cuda_graph_replays(), 0);
}

// Two runs with the step captured and replayed, one after the other in one
// process. Its sibling below runs it in a process of its own, for the exit.
TEST_F(CudaTest, TwoGraphCapturedRunsInOneProcess) {
  for (const std::string name : {"first", "second"}) {
    Trainer trainer(testing::texture_config(), testing::texture_splits(), kCuda, run(name));
    const TrainSummary s = trainer.fit();
    EXPECT_EQ(s.stop_reason, StopReason::kEpochsDone) << name;
    EXPECT_EQ(trainer.cuda_graph_replays(), s.steps - 3) << name;
  }
}

// The tests that train died of SIGSEGV after their work, in TearDown's
// remove_all (bound to libtorch.so's copy of std::filesystem; docs/gpu.md,
// "The crash"). The end of the process (static destructors of LibTorch's
// allocators, the autograd engine's device threads) is tested here too, so
// the runs go in a child process whose exit status must be 0.
TEST_F(CudaTest, TwoGraphCapturedRunsExitTheProcessCleanly) {
  fs::create_directories(dir_);
  const fs::path self = fs::read_symlink("/proc/self/exe");
  testing::ChildProcess child(
      {self.string(), "--gtest_filter=CudaTest.TwoGraphCapturedRunsInOneProcess"}, {},
      fs::current_path(), run("child.log"));
  const int status = child.wait(std::chrono::seconds(600));
  EXPECT_EQ(status, 0) << "exit status " << status << " (128 + N: signal N); output:\n"
                       << child.output();
  EXPECT_NE(child.output().find("[  PASSED  ] 1 test."), std::string::npos) << child.output();
}

// On a GPU the profile holds the kernels too, under "[gpu] ", each with
// device time, beside the host's operators.
TEST_F(CudaTest, TheStepProfileRecordsTheGpusKernels) {
  Trainer trainer(testing::texture_config(), testing::texture_splits(), kCuda, run("p"));
  const std::string path = run("profile.json");
  trainer.profile(StepProfiler(path, /*first=*/1, /*count=*/2));
  trainer.fit();
  int kernels = 0;
  double kernel_us = 0;
  bool host_operators = false;
  // The table is held by name: a range-for over read_json(path)["ops"] walks
  // a subobject of a temporary that is gone by the first iteration (before
  // C++23). That was this test's "empty profile" on the H200: the profile
  // held 2,060 host calls and 364 kernels, and the loop saw freed memory.
  const auto table = testing::read_json(path);
  for (const auto& op : table["ops"]) {
    const std::string name = op["name"];
    if (name.rfind("[gpu] ", 0) == 0) {
      ++kernels;
      kernel_us += op["self_us_per_step"].get<double>();
    } else {
      host_operators = host_operators || name == "aten::mm" || name == "aten::addmm";
    }
  }
  const std::string table_head = table.dump(1).substr(0, 2000);
  EXPECT_GT(kernels, 10) << table_head;  // products, LayerNorm, GELU, softmax, the optimizer...
  EXPECT_GT(kernel_us, 0.0);
  EXPECT_TRUE(host_operators) << table_head;
}

// On the GPU the trainer reads the step statistics only every 25 steps and
// at validations (here at step 12, the epoch's end); the bad step is still
// named exactly, and none of the steps after it reached the weights.
TEST_F(CudaTest, AnInfiniteGradientNormIsNamedByItsStep) {
  Trainer trainer(testing::texture_config(), testing::texture_splits(), kCuda, run("g"));
  testing::expect_an_infinite_norm_stops_at_step_1(trainer);
  EXPECT_FALSE(fs::exists(run("g") + "/last.pt"));
}

// best.pt written by a run on one device evaluates to the same accuracy on
// the other.
TEST_F(CudaTest, CheckpointsMoveBetweenCudaAndCpu) {
  const auto splits = testing::texture_splits();
  for (const auto& [trained_on, evaluated_on] :
       {std::pair{kCuda, c10::Device(c10::kCPU)}, std::pair{c10::Device(c10::kCPU), kCuda}}) {
    const auto dir = run(trained_on.str());
    Config c = testing::texture_config();
    c.train.epochs = 2;
    Trainer(c, splits, trained_on, dir).fit();
    auto evaluate_on = [&](c10::Device device) {
      LoadedModel loaded = load_model(dir + "/best.pt");
      loaded.model->to(device);
      const data::BatchLoader loader(splits.test, data::loader_options(c, device, false));
      return evaluate(loaded.model, loader, c.model.num_classes, Precision::kFp32);
    };
    const EvalResult there = evaluate_on(trained_on), here = evaluate_on(evaluated_on);
    EXPECT_EQ(here.count, 64);
    EXPECT_EQ(here.accuracy, there.accuracy) << trained_on << " -> " << evaluated_on;
    EXPECT_NEAR(here.loss, there.loss, 1e-5) << trained_on << " -> " << evaluated_on;
  }
}

// What a user sees for a GPU index this machine does not have: one line and
// a failing exit status, from the command line itself.
TEST_F(CudaTest, AMissingDeviceIndexIsOneLine) {
  const std::string config = std::string(VIT_SOURCE_DIR) + "/configs/fashion-mnist.json";
  const std::string missing = std::to_string(torch::cuda::device_count());
  FILE* out = ::popen(
      (std::string(VIT_BINARY) + " info --config " + config + " --device cuda:" + missing + " 2>&1")
          .c_str(),
      "r");
  ASSERT_NE(out, nullptr);
  std::string text;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, out))
    text += buffer;
  const int status = ::pclose(out);
  EXPECT_NE(status, 0);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("[error] --device cuda:" + missing + ": there is no CUDA device " + missing +
                      " (found " + missing + ")\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace vit
