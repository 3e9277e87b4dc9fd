// The example trainer's own switches: parsing, --help text, checks against the job's size and
// the faults they inject on one rank (see example_options.hpp).
#include "example_options.hpp"

#include <algorithm>
#include <chrono>
#include <string_view>
#include <utility>

namespace lens::megatron::example {
namespace {

// --slow-stage's value; the error names the flag, the value and what is accepted.
Result<SlowStage> slow_stage_named(const std::string& flag, const std::string& value) {
  static const std::pair<const char*, SlowStage> kStages[] = {{"data", SlowStage::data},
                                                              {"forward", SlowStage::forward},
                                                              {"backward", SlowStage::backward},
                                                              {"optimizer", SlowStage::optimizer},
                                                              {"checkpoint", SlowStage::checkpoint},
                                                              {"grad_sync", SlowStage::grad_sync}};
  for (const auto& [name, stage] : kStages) {
    if (value == name) return stage;
  }
  return Error(flag + ": '" + value +
               "' is not a stage; accepted: data, forward, backward, optimizer, checkpoint, "
               "grad_sync");
}

// Parses a non-negative int flag value; the error names the flag, the value and what is accepted.
Result<int> non_negative(std::string_view flag, const std::string& value) {
  std::size_t used = 0;
  int parsed = -1;
  try {
    parsed = std::stoi(value, &used);
  } catch (...) {
    used = 0;
  }
  if (used != value.size() || value.empty() || parsed < 0) {
    return Error(std::string(flag) + ": '" + value +
                 "' is not a valid value; accepted: an integer >= 0");
  }
  return parsed;
}

// --slow-ranks' value: ranks and ranges, "4-7" or "1,3,8-11"; the error names the flag, the
// value and what is accepted.
Result<std::vector<int>> rank_list(const std::string& value) {
  std::vector<int> ranks;
  const Error bad("--slow-ranks: '" + value +
                  "' is not a list of ranks; accepted: ranks and ranges such as 4-7 or 1,3,8-11");
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    const std::string item = value.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    Result<int> first = non_negative("--slow-ranks", item.substr(0, dash));
    Result<int> last =
        dash == std::string::npos ? first : non_negative("--slow-ranks", item.substr(dash + 1));
    if (!first.ok() || !last.ok() || *last < *first || *last - *first > 1 << 16) return bad;
    for (int r = *first; r <= *last; ++r) ranks.push_back(r);
    start = comma + 1;
  }
  return ranks;
}

// The int field that `flag` sets; null for a flag that is not one of them.
int* int_option(ExampleOptions& options, const std::string& flag) {
  return flag == "--slow-rank"        ? &options.slow_rank
         : flag == "--slow-ms"        ? &options.slow_ms
         : flag == "--slow-stage-pp"  ? &options.slow_stage_pp
         : flag == "--slow-from"      ? &options.slow_from
         : flag == "--hang-rank"      ? &options.hang_rank
         : flag == "--hang-at"        ? &options.hang_at
         : flag == "--inf-grad-every" ? &options.inf_grad_every
         : flag == "--crash-at"       ? &options.crash_at
                                      : nullptr;
}

// The error for a rank flag whose `value` is not a rank of a job of `world_size` ranks.
Error not_a_rank(const std::string& flag, int value, int world_size) {
  return Error(flag + ": '" + std::to_string(value) +
               "' is not a rank of this job; accepted: 0 to " + std::to_string(world_size - 1));
}

}  // namespace

Result<ExampleOptions> take_example_options(std::vector<std::string>& args) {
  ExampleOptions options;
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    int* target = int_option(options, arg);
    if (arg == "--hang-at-startup") {
      options.hang_at_startup = true;
      continue;
    }
    if (arg == "--slow-ranks") {
      if (i + 1 >= args.size()) {
        return Error("--slow-ranks: missing value; accepted: ranks and ranges such as 4-7");
      }
      Result<std::vector<int>> ranks = rank_list(args[++i]);
      if (!ranks.ok()) return ranks.error();
      options.slow_ranks = std::move(*ranks);
      continue;
    }
    if (arg == "--slow-stage" || arg == "--hang-stage") {
      if (i + 1 >= args.size()) {
        return Error(arg +
                     ": missing value; accepted: data, forward, backward, optimizer, checkpoint, "
                     "grad_sync");
      }
      Result<SlowStage> stage = slow_stage_named(arg, args[++i]);
      if (!stage.ok()) return stage.error();
      (arg == "--slow-stage" ? options.slow_stage : options.hang_stage) = *stage;
      continue;
    }
    if (target == nullptr) {
      rest.push_back(arg);
      continue;
    }
    if (i + 1 >= args.size()) {
      return Error(arg + ": missing value; accepted: an integer >= 0");
    }
    Result<int> value = non_negative(arg, args[++i]);
    if (!value.ok()) return value.error();
    *target = *value;
  }
  args = std::move(rest);
  return options;
}

const char* example_options_help() {
  return "\nexample options:\n"
         "  --slow-rank R         slow down rank R (default: none)\n"
         "  --slow-ranks LIST     or these ranks, e.g. 4-7 or 1,3,8-11 (the ranks of a fake host)\n"
         "  --slow-stage-pp K     or every rank of pipeline stage K (default: none)\n"
         "  --slow-ms X           by X ms per iteration (default 0), to show a straggler\n"
         "  --slow-stage S        in stage S: data, forward, backward, optimizer, checkpoint or\n"
         "                        grad_sync (enters the gradient all-reduce late)\n"
         "                        (default forward; checkpoint: the iterations that --save)\n"
         "  --slow-from ITER      from iteration ITER on (default 1)\n"
         "  --hang-rank R         make rank R hang for good (default: none), to show the hang\n"
         "                        report (NEMO_LENS_HANG_TIMEOUT); only a signal ends it\n"
         "  --hang-at ITER        at iteration ITER (default 2: the watchdog watches from the\n"
         "                        first finished step on)\n"
         "  --hang-stage S        in stage S: data, forward, backward, optimizer, checkpoint or\n"
         "                        grad_sync (inside the gradient all-reduce: entered, its part\n"
         "                        never sent) (default data)\n"
         "  --hang-at-startup     make --hang-rank hang in start-up (megatron.model_init) "
         "instead,\n"
         "                        before the first step (NEMO_LENS_HANG_STARTUP_TIMEOUT)\n"
         "  --inf-grad-every N    every Nth iteration's gradients hold an inf on every rank, so\n"
         "                        the update is skipped (megatron.training.skipped_iters);\n"
         "                        default 0: never\n"
         "  --crash-at ITER       every rank exits with status 3 inside iteration ITER (after\n"
         "                        its forward and backward passes) without flushing telemetry,\n"
         "                        as a killed process does; default 0: never\n";
}

Status check_example_options(const ExampleOptions& options, int world_size, int pipeline_size) {
  if (options.slow_rank >= world_size) {
    return not_a_rank("--slow-rank", options.slow_rank, world_size);
  }
  for (const int slow : options.slow_ranks) {
    if (slow >= world_size) return not_a_rank("--slow-ranks", slow, world_size);
  }
  if (options.slow_stage_pp >= pipeline_size) {
    return Error("--slow-stage-pp: '" + std::to_string(options.slow_stage_pp) +
                 "' is not a pipeline stage of this job; accepted: 0 to " +
                 std::to_string(pipeline_size - 1));
  }
  if (options.hang_at_startup && options.hang_rank < 0) {
    return Error("--hang-at-startup: no rank to hang; accepted: with --hang-rank R");
  }
  if (options.hang_rank >= world_size) {
    return not_a_rank("--hang-rank", options.hang_rank, world_size);
  }
  return Status::success();
}

InjectedFaults faults_for_rank(const ExampleOptions& options, int rank, int pipeline_rank) {
  const bool slowed = rank == options.slow_rank ||
                      std::find(options.slow_ranks.begin(), options.slow_ranks.end(), rank) !=
                          options.slow_ranks.end() ||
                      pipeline_rank == options.slow_stage_pp;
  const bool hangs = rank == options.hang_rank;
  return InjectedFaults{
      .slowdown = {options.slow_stage, std::chrono::milliseconds(slowed ? options.slow_ms : 0),
                   options.slow_from},
      .hang = {options.hang_stage, hangs ? options.hang_at : -1, hangs && options.hang_at_startup},
      .overflow = {options.inf_grad_every},
      .crash = {options.crash_at}};
}

}  // namespace lens::megatron::example
