#pragma once
// Data-parallel training on c10d (docs/distributed.md): vit joins the world that
// torchrun's environment describes (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT) through a TCPStore and a process group (Gloo on CPU, NCCL on CUDA).
// Every rank holds the whole model and optimizer; gradients are averaged before the
// optimizer step, so every rank takes the same step and the weights stay identical.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "vit/config.hpp"
#include "vit/torchrun_env.hpp"

namespace vit {

// Where Gloo's connections bind: the interface GLOO_SOCKET_IFNAME names, as in
// PyTorch; else the master's address when it is loopback; else the address the
// hostname resolves to (Gloo's default).
struct GlooBinding {
  enum Kind { kInterface, kAddress, kHostname } kind;
  std::string name;  // the interface or the address; empty for kHostname
};
GlooBinding gloo_binding(const std::string& master_addr, const std::string& socket_ifname);
bool is_loopback_address(const std::string& address);  // localhost, 127.0.0.0/8, ::1

// nccl for a CUDA device and gloo for the CPU when `requested` is auto;
// otherwise `requested`, checked against the device and this build.
DistBackend choose_backend(DistBackend requested, c10::Device device);

class ProcessGroup {
 public:
  // Connects to the store and builds the group; every rank blocks here until all
  // have arrived or `timeout` has passed. The timeout bounds every later collective
  // too, so a dead rank ends the others with an error, not a hang. `device` is where
  // the collectives' tensors live (CUDA for NCCL).
  static std::unique_ptr<ProcessGroup> join(const DistributedEnv& env, DistBackend backend,
                                            std::chrono::milliseconds timeout, c10::Device device);
  // For tests: ranks as threads sharing an in-memory store from make_local_store().
  static std::unique_ptr<ProcessGroup> join_local(const std::shared_ptr<void>& store, int rank,
                                                  int world_size,
                                                  std::chrono::milliseconds timeout);
  static std::shared_ptr<void> make_local_store();
  ~ProcessGroup();

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  bool is_main() const { return rank_ == 0; }
  DistBackend backend() const { return backend_; }
  c10::Device device() const { return device_; }

  // In place, over the ranks.
  void all_reduce_sum(at::Tensor& tensor, const char* what);
  // Averages a flat gradient over the ranks in place, in buckets of at most
  // `bucket_bytes`.
  void average_gradients(at::Tensor& flat, int64_t bucket_bytes);
  // Calls of average_gradients so far: one per optimizer step.
  int64_t gradient_averages() const { return gradient_averages_; }
  // Replaces `tensor` on every rank with rank 0's, in place.
  void broadcast_from_main(at::Tensor& tensor, const char* what);
  // Throws vit::Error on every rank unless all passed the same value (e.g. a config hash).
  void require_same(uint64_t value, const std::string& what);

 private:
  struct Impl;
  ProcessGroup(std::unique_ptr<Impl> impl, int rank, int world_size, DistBackend backend,
               c10::Device device);
  // A c10d error becomes a vit::Error naming this rank and the collective.
  template <typename F>
  void run(const char* what, F&& collective);

  std::unique_ptr<Impl> impl_;
  int rank_;
  int world_size_;
  DistBackend backend_;
  c10::Device device_;
  int64_t gradient_averages_ = 0;
};

}  // namespace vit
