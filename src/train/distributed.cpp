#include "vit/train/distributed.hpp"

#include <csignal>
#include <cstdlib>
#include <vector>

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "vit/error.hpp"

#if defined(VIT_WITH_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace vit {
namespace {

// LibTorch 2 split the process group into a front (ProcessGroup) and the
// backends behind it; the backend class holds the collectives we call.
#if TORCH_VERSION_MAJOR >= 2
using Backend = c10d::Backend;
#else
using Backend = c10d::ProcessGroup;
#endif

// Keys of our own under the store, apart from those of torchrun's agent.
constexpr const char* kStorePrefix = "vit";

// c10::Error's what() holds a backtrace; its first line says what happened.
std::string first_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  return text.substr(0, text.find('\n'));
}

// When a peer dies, its sockets close. Gloo and the TCP store write to them with
// plain send(), and the kernel would end this process with SIGPIPE (exit 141)
// before the collective could name what failed. Ignored, the write returns
// EPIPE and the collective throws. Python ignores SIGPIPE too, so this is how
// PyTorch's ranks behave.
void let_a_closed_peer_throw() {
  std::signal(SIGPIPE, SIG_IGN);
}

c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> gloo_options(std::chrono::milliseconds timeout,
                                                                 const std::string& master_addr) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  const GlooBinding binding = gloo_binding(master_addr, interface ? interface : "");
  switch (binding.kind) {
    case GlooBinding::kInterface:
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(binding.name));
      break;
    case GlooBinding::kAddress:
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(binding.name));
      break;
    case GlooBinding::kHostname:
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      break;
  }
  return options;
}

c10::intrusive_ptr<Backend> make_backend(DistBackend backend,
                                         const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                         int world_size, std::chrono::milliseconds timeout,
                                         const std::string& master_addr) {
  if (backend == DistBackend::kGloo)
    return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size,
                                                       gloo_options(timeout, master_addr));
#if defined(VIT_WITH_NCCL)
  if (backend == DistBackend::kNccl) {
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = timeout;
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, options);
  }
#endif
  throw Error(std::string("train.dist_backend '") + enum_name(backend) +
              "' is not available in this build of vit");
}

}  // namespace

bool is_loopback_address(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1" ||
         address == "[::1]";
}

// A loopback master address is used as is, so that ranks on one machine meet there
// whether or not its hostname resolves; Gloo's hostname default falls back to
// loopback with a warning.
GlooBinding gloo_binding(const std::string& master_addr, const std::string& socket_ifname) {
  if (!socket_ifname.empty()) return {GlooBinding::kInterface, socket_ifname};
  if (is_loopback_address(master_addr))
    return {GlooBinding::kAddress, master_addr == "[::1]" ? "::1" : master_addr};
  return {GlooBinding::kHostname, ""};
}

DistBackend choose_backend(DistBackend requested, c10::Device device) {
  const DistBackend backend = requested != DistBackend::kAuto ? requested
                              : device.is_cuda()              ? DistBackend::kNccl
                                                              : DistBackend::kGloo;
  if (backend == DistBackend::kNccl && !device.is_cuda())
    throw Error("train.dist_backend nccl needs a CUDA device, and this run is on " + device.str() +
                " (use gloo, or auto)");
#if !defined(VIT_WITH_NCCL)
  if (backend == DistBackend::kNccl)
    throw Error(
        "train.dist_backend nccl: this build of vit has no NCCL (it needs a LibTorch with CUDA); "
        "use gloo");
#endif
  return backend;
}

struct ProcessGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Backend> backend;
};

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl, int rank, int world_size,
                           DistBackend backend, c10::Device device)
    : impl_(std::move(impl)),
      rank_(rank),
      world_size_(world_size),
      backend_(backend),
      device_(device) {}

ProcessGroup::~ProcessGroup() = default;

std::unique_ptr<ProcessGroup> ProcessGroup::join(const DistributedEnv& env, DistBackend backend,
                                                 std::chrono::milliseconds timeout,
                                                 c10::Device device) {
  let_a_closed_peer_throw();
  auto impl = std::make_unique<Impl>();
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(env.master_port);
    // Under torchrun the agent serves the store; launched by hand (the same
    // variables, no agent), rank 0 serves it.
    options.isServer = !env.agent_store && env.rank == 0;
    options.numWorkers = static_cast<size_t>(env.world_size);
    options.waitWorkers = false;
    options.timeout = timeout;
    options.multiTenant = true;
    const auto tcp = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
    impl->store = c10::make_intrusive<c10d::PrefixStore>(kStorePrefix, tcp);
    impl->backend =
        make_backend(backend, impl->store, env.rank, env.world_size, timeout, env.master_addr);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // torchrun's store speaks the wire protocol of its own PyTorch version.
    const std::string hint = env.agent_store
                                 ? fmt::format(
                                       " (torchrun must come from the PyTorch version of vit's "
                                       "LibTorch, {})",
                                       TORCH_VERSION)
                                 : "";
    throw Error(fmt::format("rank {} of {}: cannot join the process group at {}:{} ({}): {}{}",
                            env.rank, env.world_size, env.master_addr, env.master_port,
                            enum_name(backend), first_line(e), hint));
  }
  return std::unique_ptr<ProcessGroup>(
      new ProcessGroup(std::move(impl), env.rank, env.world_size, backend, device));
}

std::shared_ptr<void> ProcessGroup::make_local_store() {
  auto store = c10::make_intrusive<c10d::HashStore>();
  return std::make_shared<c10::intrusive_ptr<c10d::Store>>(std::move(store));
}

std::unique_ptr<ProcessGroup> ProcessGroup::join_local(const std::shared_ptr<void>& store, int rank,
                                                       int world_size,
                                                       std::chrono::milliseconds timeout) {
  let_a_closed_peer_throw();
  auto impl = std::make_unique<Impl>();
  impl->store = *std::static_pointer_cast<c10::intrusive_ptr<c10d::Store>>(store);
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  impl->backend = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, rank, world_size,
                                                              std::move(options));
  return std::unique_ptr<ProcessGroup>(
      new ProcessGroup(std::move(impl), rank, world_size, DistBackend::kGloo, c10::kCPU));
}

template <typename F>
void ProcessGroup::run(const char* what, F&& collective) {
  try {
    collective();
  } catch (const std::exception& e) {
    throw Error(fmt::format(
        "rank {} of {}: {} failed ({}); another rank has probably stopped, see its log: {}", rank_,
        world_size_, what, enum_name(backend_), first_line(e)));
  }
}

void ProcessGroup::all_reduce_sum(at::Tensor& tensor, const char* what) {
  run(what, [&] {
    std::vector<at::Tensor> tensors{tensor};
    impl_->backend->allreduce(tensors)->wait();
  });
}

// The buckets are all in flight at once, as DDP's are. Under train.accum_steps this
// runs once per optimizer step, not per micro-batch.
void ProcessGroup::average_gradients(at::Tensor& flat, int64_t bucket_bytes) {
  const int64_t per_bucket = std::max<int64_t>(1, bucket_bytes / int64_t(flat.element_size()));
  const int64_t n = flat.numel();
  run("the gradient all-reduce", [&] {
    // Buckets are views of the flat buffer: reduced in place, no copies.
    std::vector<c10::intrusive_ptr<c10d::Work>> pending;
    std::vector<std::vector<at::Tensor>> buckets;
    buckets.reserve(size_t((n + per_bucket - 1) / per_bucket));
    for (int64_t begin = 0; begin < n; begin += per_bucket) {
      buckets.push_back({flat.slice(/*dim=*/0, begin, std::min(n, begin + per_bucket))});
      pending.push_back(impl_->backend->allreduce(buckets.back()));
    }
    for (auto& work : pending)
      work->wait();
  });
  flat.div_(world_size_);
  ++gradient_averages_;
}

void ProcessGroup::broadcast_from_main(at::Tensor& tensor, const char* what) {
  run(what, [&] {
    std::vector<at::Tensor> tensors{tensor};
    impl_->backend->broadcast(tensors)->wait();  // root 0 by default
  });
}

void ProcessGroup::require_same(uint64_t value, const std::string& what) {
  // Rank 0's value to everyone, then the count of ranks that differ, so that
  // every rank fails together instead of some waiting for the others.
  const auto options = torch::TensorOptions().dtype(torch::kInt64).device(device_);
  auto mine = torch::tensor({static_cast<int64_t>(value)}, options);
  auto main_value = mine.clone();
  broadcast_from_main(main_value, "the start-up check");
  auto differs = main_value.ne(mine).to(torch::kInt64);
  all_reduce_sum(differs, "the start-up check");
  if (differs.item<int64_t>() > 0)
    throw Error(fmt::format(
        "rank {} of {}: {} differs between the ranks ({} rank(s) disagree with rank 0); every "
        "rank must run the same command",
        rank_, world_size_, what, differs.item<int64_t>()));
}

}  // namespace vit
