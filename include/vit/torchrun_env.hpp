#pragma once
// The variables torchrun sets for each process it starts (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), read once here for
// the trainer's process group and for the data's one listing per machine.
#include <functional>
#include <optional>
#include <string>

namespace vit {

// One process's place in the world, from torchrun's environment.
struct DistributedEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // the rank on this machine: picks cuda:LOCAL_RANK
  int local_world_size = 1;  // ranks on this machine: they share its cores
  std::string master_addr;
  int master_port = 0;
  // TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent serves the store; every rank
  // connects as a client.
  bool agent_store = false;
};

// This process's torchrun variables; nullopt when none is set (vit runs alone).
// `lookup` is getenv by default. Throws vit::Error for a partial or malformed set,
// naming the variable, the value and what was expected.
std::optional<DistributedEnv> distributed_env(
    const std::function<const char*(const char*)>& lookup = {});

// LOCAL_WORLD_SIZE of a complete torchrun environment, else 1.
int local_world_size();

}  // namespace vit
