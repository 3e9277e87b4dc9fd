// lens::note_step_completed() and its reader (see step_progress.hpp).
#include "telemetry/step_progress.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <mutex>

#include "lens/step_progress.hpp"

namespace lens {
namespace telemetry {
namespace {

struct Steps {
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::int64_t> last_ns{0};
  // Slot i holds the time between note i and note i + 1 (modulo kRecentSteps).
  std::array<std::atomic<std::int64_t>, kRecentSteps> durations_ns{};
};

Steps& steps() {
  static Steps* instance = new Steps();  // leaked: notes may come from threads at exit
  return *instance;
}

struct FirstStepHook {
  std::mutex mutex;  // held while the hook runs, so that clearing it waits for a running one
  std::function<void()> hook;
};

FirstStepHook& first_step_hook() {
  static FirstStepHook* instance = new FirstStepHook();  // leaked, as steps()
  return *instance;
}

void run_first_step_hook() noexcept {
  FirstStepHook& h = first_step_hook();
  std::lock_guard<std::mutex> lock(h.mutex);
  if (!h.hook) return;
  try {
    h.hook();
  } catch (...) {
    // The hook reports its own failures; the training step is not disturbed.
  }
}

}  // namespace

std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void on_first_step(std::function<void()> hook) {
  FirstStepHook& h = first_step_hook();
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    h.hook = std::move(hook);
  }
  if (steps().count.load(std::memory_order_acquire) > 0) run_first_step_hook();
}

void reset_step_progress_for_testing() noexcept {
  Steps& s = steps();
  s.count.store(0);
  s.last_ns.store(0);
  for (auto& duration : s.durations_ns) duration.store(0);
}

StepProgress read_step_progress() {
  Steps& s = steps();
  StepProgress out;
  // Acquire: the duration written before a count is seen with it.
  out.steps = s.count.load(std::memory_order_acquire);
  out.last_step_ns = s.last_ns.load(std::memory_order_relaxed);
  const std::uint64_t durations = out.steps == 0 ? 0 : out.steps - 1;
  const std::size_t kept = durations < kRecentSteps ? static_cast<std::size_t>(durations)
                                                    : kRecentSteps;
  out.recent_step_seconds.reserve(kept);
  for (std::size_t i = 0; i < kept; ++i) {
    const std::int64_t ns = s.durations_ns[i].load(std::memory_order_relaxed);
    if (ns > 0) out.recent_step_seconds.push_back(static_cast<double>(ns) / 1e9);
  }
  return out;
}

}  // namespace telemetry

void note_step_completed() noexcept {
  telemetry::Steps& s = telemetry::steps();
  const std::int64_t now = telemetry::steady_now_ns();
  const std::int64_t previous = s.last_ns.exchange(now, std::memory_order_relaxed);
  const std::uint64_t index = s.count.load(std::memory_order_relaxed);
  if (previous != 0 && now > previous) {
    s.durations_ns[(index == 0 ? 0 : index - 1) % telemetry::kRecentSteps].store(now - previous,
                                                          std::memory_order_relaxed);
  }
  // Release: pairs with read_step_progress's acquire.
  if (s.count.fetch_add(1, std::memory_order_release) == 0) telemetry::run_first_step_hook();
}

}  // namespace lens
