#include "vit/torchrun_env.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "vit/error.hpp"

namespace vit {
namespace {

int parse_int(const char* name, const char* text, int low, int high) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high)
    throw Error(fmt::format("{}='{}': expected an integer in {}..{} (set by torchrun)", name, text,
                            low, high));
  return static_cast<int>(value);
}

}  // namespace

std::optional<DistributedEnv> distributed_env(
    const std::function<const char*(const char*)>& lookup) {
  const auto get = [&](const char* name) -> const char* {
    const char* value = lookup ? lookup(name) : std::getenv(name);
    return value && *value ? value : nullptr;
  };
  const char* required[] = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
  std::vector<std::string> missing;
  for (const char* name : required)
    if (!get(name)) missing.push_back(name);
  if (missing.size() == std::size(required) && !get("LOCAL_RANK")) return std::nullopt;
  if (!missing.empty())
    throw Error(fmt::format(
        "torchrun's environment is incomplete: {} not set (a distributed run needs RANK, "
        "WORLD_SIZE, MASTER_ADDR and MASTER_PORT; launch with torchrun --no-python)",
        fmt::join(missing, ", ")));
  DistributedEnv env;
  env.world_size =
      parse_int("WORLD_SIZE", get("WORLD_SIZE"), 1, std::numeric_limits<int>::max() / 2);
  env.rank = parse_int("RANK", get("RANK"), 0, env.world_size - 1);
  env.local_rank = get("LOCAL_RANK") ? parse_int("LOCAL_RANK", get("LOCAL_RANK"), 0, env.rank) : 0;
  env.local_world_size =
      get("LOCAL_WORLD_SIZE")
          ? parse_int("LOCAL_WORLD_SIZE", get("LOCAL_WORLD_SIZE"), 1, env.world_size)
          : 1;
  env.master_addr = get("MASTER_ADDR");
  env.master_port = parse_int("MASTER_PORT", get("MASTER_PORT"), 1, 65535);
  const char* agent = get("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = agent && std::string(agent) == "True";
  return env;
}

int local_world_size() {
  const auto env = distributed_env();
  return env ? env->local_world_size : 1;
}

}  // namespace vit
