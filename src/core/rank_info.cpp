// RankInfo::detect and RankInfo::make (see include/lens/rank_info.hpp): where this process
// sits in a distributed job, read from the variables a launcher sets, validated into one-line
// errors. Pure functions of the given Env; thread-safe.
//
// Decisions (documented in the header comment and here):
//  - A launcher is chosen by its rank variable being set and non-blank, in the order torchrun,
//    Open MPI, MPICH/PMI, SLURM. Its world-size variable must then be set too.
//  - A missing local rank is 0. A missing local world size is local_rank + 1 (the smallest
//    size consistent with the local rank). SLURM's local world size comes from
//    SLURM_NTASKS_PER_NODE when it is a plain integer, else from this node's entry of
//    SLURM_TASKS_PER_NODE ("4(x2),3" style), else local_rank + 1.
//  - A missing node rank is rank / local_world_size when the local world size came from a
//    variable (block placement, what every launcher does by default), else 0.
//  - No launcher: rank 0 of 1. LOCAL_RANK / LOCAL_WORLD_SIZE are still read, so that
//    first_rank_per_node behaves as in the Python original, which reads LOCAL_RANK alone.
#include "lens/rank_info.hpp"

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/parse.hpp"

namespace lens {
namespace {

struct LauncherVars {
  std::string_view source;
  std::string_view rank;
  std::string_view world_size;
  std::string_view local_rank;
  std::string_view local_world_size;  // empty: the launcher has none
  std::string_view node_rank;         // empty: the launcher has none
};

constexpr LauncherVars kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", ""},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
     "SLURM_NODEID"},
};

// The trimmed value of a variable, or nullopt when it is unset or blank (docs/configuration.md,
// "Prefixes and lookup").
std::optional<std::string> read(const Env& env, std::string_view name) {
  if (name.empty()) {
    return std::nullopt;
  }
  auto raw = env.get(name);
  if (!raw) {
    return std::nullopt;
  }
  const std::string_view trimmed = detail::trim(*raw);
  if (trimmed.empty()) {
    return std::nullopt;
  }
  return std::string(trimmed);
}

// Parses an integer in [minimum, INT_MAX]; the error names the variable and the value.
Result<int> parse_count(std::string_view name, const std::string& text, int minimum) {
  const auto value = detail::parse_int64(text);
  if (!value || *value < minimum || *value > INT_MAX) {
    return Error("Invalid " + std::string(name) + ": " + detail::quoted(text) + "; expected a " +
                 (minimum == 0 ? "non-negative" : "positive") + " integer");
  }
  return static_cast<int>(*value);
}

// This node's task count from SLURM_TASKS_PER_NODE ("2(x3),1": 2 tasks on each of three
// nodes, then 1), or nullopt when it is absent, malformed or does not cover the node.
std::optional<int> slurm_tasks_on_node(const Env& env, int node) {
  const auto text = read(env, "SLURM_TASKS_PER_NODE");
  if (!text) {
    return std::nullopt;
  }
  std::int64_t first_node = 0;
  for (std::string_view part : detail::split(*text, ',')) {
    std::int64_t repeat = 1;
    if (const auto open = part.find("(x"); open != std::string_view::npos) {
      if (part.back() != ')') {
        return std::nullopt;
      }
      const auto count = detail::parse_int64(part.substr(open + 2, part.size() - open - 3));
      if (!count || *count < 1) {
        return std::nullopt;
      }
      repeat = *count;
      part = part.substr(0, open);
    }
    const auto tasks = detail::parse_int64(part);
    if (!tasks || *tasks < 1 || *tasks > INT_MAX) {
      return std::nullopt;
    }
    if (node < first_node + repeat) {
      return static_cast<int>(*tasks);
    }
    first_node += repeat;
  }
  return std::nullopt;
}

std::string pair(std::string_view name, int value) {
  return std::string(name) + "=" + std::to_string(value);
}

// Reads the local rank and local world size of a launcher (or of the no-launcher default).
// `local_size_var` becomes the variable the local world size came from ("" = inferred).
Status read_local(const Env& env, const LauncherVars& vars, RankInfo& info,
                  std::string& local_size_var) {
  if (auto text = read(env, vars.local_rank)) {
    auto value = parse_count(vars.local_rank, *text, 0);
    if (!value) {
      return value.error();
    }
    info.local_rank = *value;
  }
  local_size_var.clear();
  if (auto text = read(env, vars.local_world_size)) {
    if (vars.source == "slurm") {
      // SLURM_NTASKS_PER_NODE is used only when it is a plain integer (see file comment).
      const auto value = detail::parse_int64(*text);
      if (value && *value >= 1 && *value <= INT_MAX) {
        info.local_world_size = static_cast<int>(*value);
        local_size_var = vars.local_world_size;
      }
    } else {
      auto value = parse_count(vars.local_world_size, *text, 1);
      if (!value) {
        return value.error();
      }
      info.local_world_size = *value;
      local_size_var = vars.local_world_size;
    }
  }
  if (local_size_var.empty()) {
    info.local_world_size = info.local_rank + 1;
  }
  return Status::success();
}

Result<RankInfo> detect_launcher(const Env& env, const LauncherVars& vars,
                                 const std::string& rank_text) {
  RankInfo info;
  info.source = std::string(vars.source);
  auto rank = parse_count(vars.rank, rank_text, 0);
  if (!rank) {
    return rank.error();
  }
  info.rank = *rank;

  const auto world_text = read(env, vars.world_size);
  if (!world_text) {
    return Error("Missing " + std::string(vars.world_size) + ": " + pair(vars.rank, info.rank) +
                 " is set but " + std::string(vars.world_size) +
                 " is not; expected a positive integer");
  }
  auto world = parse_count(vars.world_size, *world_text, 1);
  if (!world) {
    return world.error();
  }
  info.world_size = *world;
  if (info.rank >= info.world_size) {
    return Error("Inconsistent rank: " + pair(vars.rank, info.rank) + " is not less than " +
                 pair(vars.world_size, info.world_size));
  }

  std::string local_size_var;
  if (auto status = read_local(env, vars, info, local_size_var); !status) {
    return Error(status.message());
  }

  std::optional<int> node_rank;
  if (auto text = read(env, vars.node_rank)) {
    auto value = parse_count(vars.node_rank, *text, 0);
    if (!value) {
      return value.error();
    }
    node_rank = *value;
  }
  if (vars.source == "slurm" && local_size_var.empty()) {
    if (auto tasks = slurm_tasks_on_node(env, node_rank.value_or(0))) {
      info.local_world_size = *tasks;
      local_size_var = "SLURM_TASKS_PER_NODE";
    }
  }

  const bool local_size_known = !local_size_var.empty();
  if (local_size_known && info.local_rank >= info.local_world_size) {
    return Error("Inconsistent local rank: " + pair(vars.local_rank, info.local_rank) +
                 " is not less than " + pair(local_size_var, info.local_world_size));
  }
  if (info.local_world_size > info.world_size) {
    if (!local_size_known) {
      return Error("Inconsistent local rank: " + pair(vars.local_rank, info.local_rank) +
                   " is not less than " + pair(vars.world_size, info.world_size));
    }
    return Error("Inconsistent local world size: " + pair(local_size_var, info.local_world_size) +
                 " is greater than " + pair(vars.world_size, info.world_size));
  }
  if (node_rank) {
    info.node_rank = *node_rank;
  } else if (local_size_known) {
    info.node_rank = info.rank / info.local_world_size;
  }
  return info;
}

}  // namespace

Result<RankInfo> RankInfo::detect(const Env& env) {
  for (const LauncherVars& vars : kLaunchers) {
    if (auto rank_text = read(env, vars.rank)) {
      return detect_launcher(env, vars, *rank_text);
    }
  }
  // No launcher: a single process, keeping LOCAL_RANK / LOCAL_WORLD_SIZE when they are set.
  RankInfo info;
  info.source = "default";
  std::string local_size_var;
  if (auto status = read_local(env, kLaunchers[0], info, local_size_var); !status) {
    return Error(status.message());
  }
  if (!local_size_var.empty() && info.local_rank >= info.local_world_size) {
    return Error("Inconsistent local rank: " + pair(kLaunchers[0].local_rank, info.local_rank) +
                 " is not less than " +
                 pair(kLaunchers[0].local_world_size, info.local_world_size));
  }
  return info;
}

Result<RankInfo> RankInfo::make(int rank, int world_size, int local_rank, int local_world_size,
                                int node_rank) {
  const auto invalid = [](std::string_view name, int value, std::string_view accepted) {
    return Error("Invalid " + std::string(name) + ": " + std::to_string(value) + "; expected a " +
                 std::string(accepted) + " integer");
  };
  if (rank < 0) {
    return invalid("rank", rank, "non-negative");
  }
  if (world_size < 1) {
    return invalid("world_size", world_size, "positive");
  }
  if (local_rank < 0) {
    return invalid("local_rank", local_rank, "non-negative");
  }
  if (local_world_size < 1) {
    return invalid("local_world_size", local_world_size, "positive");
  }
  if (node_rank < 0) {
    return invalid("node_rank", node_rank, "non-negative");
  }
  if (rank >= world_size) {
    return Error("Inconsistent rank: " + pair("rank", rank) + " is not less than " +
                 pair("world_size", world_size));
  }
  if (local_rank >= local_world_size) {
    return Error("Inconsistent local rank: " + pair("local_rank", local_rank) +
                 " is not less than " + pair("local_world_size", local_world_size));
  }
  if (local_world_size > world_size) {
    return Error("Inconsistent local world size: " + pair("local_world_size", local_world_size) +
                 " is greater than " + pair("world_size", world_size));
  }
  RankInfo info;
  info.rank = rank;
  info.world_size = world_size;
  info.local_rank = local_rank;
  info.local_world_size = local_world_size;
  info.node_rank = node_rank;
  info.source = "explicit";
  return info;
}

}  // namespace lens
