// The process-wide record of finished training steps that lens::note_step_completed() keeps
// (lens/step_progress.hpp) and the hang watchdog reads. Thread-safety: lock-free; a reader may
// see the newest duration of a step a moment before its count (harmless for a median).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace lens::telemetry {

struct StepProgress {
  std::uint64_t steps = 0;        // steps noted so far in this process
  std::int64_t last_step_ns = 0;  // steady_clock time of the newest one (0: none yet)
  std::vector<double> recent_step_seconds;  // the time between the last kRecentSteps notes
};

inline constexpr std::size_t kRecentSteps = 64;

StepProgress read_step_progress();

// `hook` runs once, on the thread that notes the first step of the process, or right away (on
// the calling thread) when a step was noted already; an empty hook clears it. A hook never runs
// after the call that replaced or cleared it has returned. (The hang watchdog starts its thread
// this way: a process that never trains never gets one.)
void on_first_step(std::function<void()> hook);

// Forgets every step noted (tests that note steps leave the process as they found it).
void reset_step_progress_for_testing() noexcept;

// steady_clock::now() in nanoseconds since its epoch.
std::int64_t steady_now_ns() noexcept;

}  // namespace lens::telemetry
