// The faults the example trainer injects on purpose, for the run report and the hang watchdog to
// find: a straggler (Slowdown), a rank that stops for good (Hang), gradients that overflow
// (GradientOverflow) and a crash mid-step (Crash). Plain values (no libtorch), applied on the
// training thread.
#pragma once

#include <chrono>

namespace lens::megatron::example {

// The exit status of --crash-at's crash.
inline constexpr int kCrashStatus = 3;

// Where in an iteration a slowdown or a hang strikes (--slow-stage, --hang-stage).
enum class SlowStage { data, forward, backward, optimizer, checkpoint, grad_sync };

// The injected straggler (--slow-rank/--slow-ms/--slow-stage/--slow-from): extra time slept
// inside one stage's span on one rank from one iteration on, for the run report's stall
// attribution to find.
struct Slowdown {
  SlowStage stage = SlowStage::forward;
  std::chrono::milliseconds per_iteration{0};  // zero on every rank but --slow-rank
  int from = 1;                                // first slowed iteration

  // Sleeps `parts`-th of the delay when `stage` of `iteration` is slowed (a stage that runs once
  // per microbatch passes the microbatch count).
  void apply(SlowStage at, int iteration, int parts = 1) const;
};

// The injected hang (--hang-rank/--hang-at/--hang-stage): one rank stops for good inside one
// stage's span at one iteration, for the hang watchdog (HANG_TIMEOUT) to report; the other ranks
// then wait in their next collective. Stage grad_sync stops after the rank has entered the
// gradient all-reduce (counted, span open) and before its part goes out: the others wait in it
// for a rank that is itself inside it. --hang-at-startup stops in megatron.model_init instead,
// before the first step. The process ends only by a signal.
struct Hang {
  SlowStage stage = SlowStage::data;
  int at = -1;              // the iteration that hangs; -1 on every rank but --hang-rank
  bool at_startup = false;  // --hang-at-startup on --hang-rank

  void apply(SlowStage where, int iteration) const;
  // Hangs here when this rank hangs in start-up (called inside megatron.model_init).
  void apply_at_startup() const;
  [[noreturn]] static void forever();
};

// --inf-grad-every N: every Nth iteration's gradients hold an inf (on every rank), so the
// optimizer skips the update as Megatron's does on an overflow.
struct GradientOverflow {
  int every = 0;  // 0: never

  // Whether `iteration`'s gradients overflow (the trainer then writes an inf into them).
  bool due(int iteration) const { return every > 0 && iteration % every == 0; }
};

// --crash-at ITER: every rank dies inside iteration ITER, after its forward and backward passes,
// as a killed process does: exit status kCrashStatus, telemetry not flushed.
struct Crash {
  int at = 0;  // 0: never

  void apply(int iteration) const;
};

// The faults of this rank.
struct InjectedFaults {
  Slowdown slowdown;
  Hang hang;
  GradientOverflow overflow;
  Crash crash;

  // The slowdown, then the hang, of `stage` in `iteration` (`parts` as Slowdown::apply's).
  void apply(SlowStage stage, int iteration, int parts = 1) const {
    slowdown.apply(stage, iteration, parts);
    hang.apply(stage, iteration);
  }
};

}  // namespace lens::megatron::example
