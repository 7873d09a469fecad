// Launching the few thousand kernels of a ViT step one by one costs the host more
// time than small batches take on the GPU. The trainer's step, the optimizer
// (learning rate and step count on the device), fp16's loss scaler and StepTotals
// never read device values on the host, so the step can be captured. The warm-up
// steps run on a side stream, where cuBLAS and the allocator settle, as CUDA graphs
// require.
#include "vit/train/cuda_graph_step.hpp"

#include <optional>
#include <vector>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "vit/build_features.hpp"
#include "vit/error.hpp"

#if VIT_WITH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace vit {

#if VIT_WITH_CUDA

namespace {

using Batches = std::vector<data::Batch>;

bool same_shapes(const at::Tensor& a, const at::Tensor& b) {
  if (a.defined() != b.defined()) return false;
  return !a.defined() || (a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type());
}

bool same_shapes(const data::Batch& a, const data::Batch& b) {
  return same_shapes(a.images, b.images) && same_shapes(a.labels, b.labels) &&
         same_shapes(a.targets, b.targets);
}

bool same_shapes(const Batches& a, const Batches& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_shapes(a[i], b[i])) return false;
  return true;
}

// Batches of fresh tensors with `batches`' shapes and values, on their device.
Batches static_copy(const Batches& batches) {
  Batches out;
  for (const auto& batch : batches) {
    data::Batch copy;
    copy.images = batch.images.clone();
    copy.labels = batch.labels.clone();
    if (batch.targets.defined()) copy.targets = batch.targets.clone();
    out.push_back(std::move(copy));
  }
  return out;
}

void copy_into(Batches& to, const Batches& from) {
  for (size_t i = 0; i < from.size(); ++i) {
    to[i].images.copy_(from[i].images, /*non_blocking=*/true);
    to[i].labels.copy_(from[i].labels, /*non_blocking=*/true);
    if (from[i].targets.defined()) to[i].targets.copy_(from[i].targets, /*non_blocking=*/true);
  }
}

}  // namespace

struct CudaGraphStep::Impl {
  Step step;
  c10::Device device;
  int64_t warmup_steps;
  int64_t eager_steps = 0;
  int64_t replays = 0;
  bool eager_only;  // not a CUDA device, or the capture failed
  std::optional<c10::cuda::CUDAStream> side;
  std::optional<at::cuda::CUDAGraph> graph;
  // The graph's private memory pool (c10's MempoolId_t; its namespace moved
  // between LibTorch versions).
  decltype(at::cuda::graph_pool_handle()) pool{0, 0};
  std::vector<data::Batch> inputs;  // the captured graph's static inputs

  Impl(Step s, c10::Device d, int64_t w)
      : step(std::move(s)), device(d), warmup_steps(w), eager_only(!d.is_cuda()) {
    if (!eager_only) side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, d.index());
  }

  // `work` on the side stream, after everything queued before it and before
  // anything queued after it (a few full waits, in the first steps only).
  void on_side_stream(const std::function<void()>& work) {
    const c10::cuda::CUDAGuard device_guard(device);
    c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
    {
      const c10::cuda::CUDAStreamGuard stream_guard(*side);
      work();
    }
    side->synchronize();
  }

  // A capture that threw midway leaves three things behind, each undone
  // here: the side stream still capturing (later launches on it would fail),
  // the caching allocator still routing the side stream's allocations into
  // the graph's private pool (capture_end would have ended that, but it
  // never ran), and the pool itself, which CUDAGraph releases only after a
  // capture that ended. The pool's id is ours (capture() made it), because
  // CUDAGraph::pool() refuses to answer before a successful capture.
  void abandon_capture() {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(side->stream(), &status) == cudaSuccess &&
        status != cudaStreamCaptureStatusNone) {
      cudaGraph_t partial = nullptr;
      if (cudaStreamEndCapture(side->stream(), &partial) == cudaSuccess && partial)
        cudaGraphDestroy(partial);
    }
    (void)cudaGetLastError();  // the failed capture's error is reported above, not later
    c10::cuda::CUDACachingAllocator::endAllocateToPool(device.index(), pool);
    c10::cuda::CUDACachingAllocator::releasePool(device.index(), pool);
    graph.reset();
  }

  void capture(const std::vector<data::Batch>& batch) {
    inputs = static_copy(batch);
    graph.emplace();
    pool = at::cuda::graph_pool_handle();
    // Autocast's cache of cast weights would hold tensors from outside the
    // graph's memory pool; captured casts must be redone on every replay.
    const bool cache_was_enabled = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    try {
      on_side_stream([&] {
        graph->capture_begin(pool);
        step(inputs);
        graph->capture_end();
      });
    } catch (const c10::Error& e) {
      abandon_capture();
      at::autocast::set_autocast_cache_enabled(cache_was_enabled);
      eager_only = true;
      spdlog::warn("train.cuda_graph: capturing the step failed ({}); training on without it",
                   first_line_of(e));
      step(batch);  // a capture runs nothing: this step is still to do
      return;
    }
    at::autocast::set_autocast_cache_enabled(cache_was_enabled);
    spdlog::info("train.cuda_graph: the training step is captured after {} eager steps",
                 eager_steps);
    graph->replay();  // the capture queued nothing: run the captured step once
    ++replays;
  }

  void run(const std::vector<data::Batch>& batch) {
    if (graph && same_shapes(batch, inputs)) {
      copy_into(inputs, batch);
      graph->replay();
      ++replays;
    } else if (graph || eager_only) {
      step(batch);  // another shape (a partial batch), or no graph at all
    } else if (eager_steps < warmup_steps) {
      on_side_stream([&] { step(batch); });
      ++eager_steps;
    } else {
      capture(batch);
    }
  }
};

CudaGraphStep::CudaGraphStep(Step step, c10::Device device, int64_t warmup_steps)
    : impl_(std::make_unique<Impl>(std::move(step), device, warmup_steps)) {}

#else

struct CudaGraphStep::Impl {
  Step step;
  int64_t replays = 0;  // never captured, never replayed
  void run(const std::vector<data::Batch>& batch) { step(batch); }
};

CudaGraphStep::CudaGraphStep(Step step, c10::Device, int64_t)
    : impl_(std::make_unique<Impl>(Impl{std::move(step), 0})) {}

#endif

CudaGraphStep::~CudaGraphStep() = default;

void CudaGraphStep::run(const std::vector<data::Batch>& batch) {
  impl_->run(batch);
}

int64_t CudaGraphStep::replays() const {
  return impl_->replays;
}

}  // namespace vit
