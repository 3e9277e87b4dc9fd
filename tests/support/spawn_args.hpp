// argv and envp for the tests that start processes with posix_spawn: the entries of the test's
// own environment that children get, and the null-terminated pointer arrays.
#pragma once

#include <map>
#include <string>
#include <vector>

extern char** environ;

namespace lens::testing {

// The launcher and lens variables of rank `rank` of `world` ranks on one host, every rank
// exporting (rank strategy all_ranks), telemetry on, run id `run_id`.
inline std::map<std::string, std::string> exporting_rank_variables(int rank, int world,
                                                                   const std::string& run_id) {
  return {{"RANK", std::to_string(rank)},       {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(rank)}, {"LOCAL_WORLD_SIZE", std::to_string(world)},
          {"NEMO_LENS_ENABLED", "1"},           {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
          {"NEMO_LENS_RUN_ID", run_id}};
}

// The sanitizer settings and PATH of this process's environment, and HOME with `with_home`:
// nothing else, so that no launcher variable of the test's own environment reaches a child.
inline std::vector<std::string> passed_on_environment(bool with_home) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    for (const char* keep : {"ASAN_", "UBSAN_", "TSAN_", "LSAN_", "PATH=", "HOME="}) {
      if (entry.rfind(keep, 0) == 0 && (with_home || entry.rfind("HOME=", 0) != 0)) {
        out.push_back(entry);
      }
    }
  }
  return out;
}

// Pointers to the strings of `items`, then a null pointer (argv, envp); valid while `items` is.
inline std::vector<char*> null_terminated(std::vector<std::string>& items) {
  std::vector<char*> out;
  out.reserve(items.size() + 1);
  for (auto& item : items) out.push_back(item.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace lens::testing
