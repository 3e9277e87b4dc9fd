// The hang watchdog (HANG_TIMEOUT, docs/configuration.md): when no training step finishes
// (lens::note_step_completed) for the hang timeout, the rank reports where it is — the spans
// open on each of its threads, outermost first, with how long each has been open — once when
// the hang is detected, again each time it has lasted twice as long (at most an hour apart),
// and once more when a step finishes again ("progress resumed").
//
// HangMonitor is the decision alone (time and progress passed in, so tests drive it);
// HangWatchdog is the thread that polls it and hands each event to a sink. Thread-safety:
// HangMonitor belongs to one thread; HangWatchdog's start() and stop() may race (any thread).
// Watching starts at the first finished step, so that a process that never notes one (an
// inference server, a tool) never reports; a process that says it trains
// (lens::expect_training_steps) is watched from setup with the start-up timeout
// (HANG_STARTUP_TIMEOUT) until its first step: a hang in initialisation, checkpoint load or the
// first collective is reported too.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lens/config.hpp"
#include "telemetry/step_progress.hpp"

namespace lens::telemetry {

// The automatic timeout: max(kAutoTimeoutFactor x the median of the recent steps, the floor).
inline constexpr double kAutoTimeoutFactor = 10.0;
inline constexpr double kAutoTimeoutFloorSeconds = 60.0;
// Repeats come when the hang has lasted twice as long as at the previous report, at most this
// long after it.
inline constexpr double kMaxRepeatSeconds = 3600.0;
// HANG_STARTUP_TIMEOUT=auto: how long a training process may take to its first step.
inline constexpr double kAutoStartupTimeoutSeconds = 600.0;

struct HangEvent {
  enum class Kind { hang, resumed };
  Kind kind = Kind::hang;
  int report = 0;           // hang: 1 for the first report of the episode, 2, 3... for repeats;
                            // resumed: how many reports the episode had
  double stalled_s = 0.0;   // hang: since the last step (or since setup); resumed: the whole gap
  double timeout_s = 0.0;   // the episode's timeout
  std::uint64_t steps = 0;  // steps finished before the hang
  bool startup = false;     // before the first step (the start-up timeout applied)
};

// Whether this process said it trains (lens::expect_training_steps).
bool training_steps_expected() noexcept;

class HangMonitor {
 public:
  // `armed_ns`: when watching began (steady_clock ns): steps noted before it count from there.
  // `startup`: the timeout before the first step, which applies only while `check` is told the
  // process trains (its `steps_expected`).
  HangMonitor(HangTimeout timeout, std::int64_t armed_ns,
              HangTimeout startup = {HangTimeout::Mode::off, 0.0}) noexcept
      : timeout_(timeout), startup_(startup), armed_ns_(armed_ns) {}

  // The timeout that applies now (the automatic one from `progress`'s recent steps).
  double timeout_seconds(const StepProgress& progress) const;
  // The event due at `now_ns`, if any.
  std::optional<HangEvent> check(const StepProgress& progress, std::int64_t now_ns,
                                 bool steps_expected = false);
  // The start-up timeout in seconds; nullopt when off.
  std::optional<double> startup_seconds() const;

 private:
  HangTimeout timeout_;
  HangTimeout startup_;
  bool startup_hang_ = false;
  std::int64_t armed_ns_;
  bool hanging_ = false;
  int reports_ = 0;
  std::uint64_t steps_at_hang_ = 0;
  std::int64_t since_ns_ = 0;        // the last progress before the hang
  std::int64_t last_report_ns_ = 0;  // when the newest report was due
  double hang_timeout_s_ = 0.0;
};

// One open span: its name and how long it has been open.
struct OpenSpanAge {
  std::string name;
  double open_s = 0.0;
};
// One thread's open spans, outermost first.
using OpenStack = std::vector<OpenSpanAge>;

// The stack that says where the rank is: the one whose innermost span has been open longest
// (the thread stuck longest); nullptr when no thread has an open span.
const OpenStack* stuck_stack(const std::vector<OpenStack>& stacks);

// "megatron.train_step (42.0 s) > megatron.grad_sync.finish (41.8 s)"
std::string stack_text(const OpenStack& stack);

// The report's one line (also the log record's body):
//   hang: "no step finished for 42.0 s (hang timeout 10.0 s, 12 steps so far): <stack>"
//         plus "; N other threads with open spans" when there are, or ": no open spans";
//         repeats say "still no step finished for ..." and end with " (report 2)".
//   start-up hang: "no step finished since start-up for 12.0 s (start-up timeout 10.0 s): ..."
//   resumed: "progress resumed: a step finished after 73.2 s without one"
std::string event_text(const HangEvent& event, const std::vector<OpenStack>& stacks);

class HangWatchdog {
 public:
  struct Sources {
    std::function<StepProgress()> progress = read_step_progress;
    std::function<std::int64_t()> now_ns = steady_now_ns;
    std::function<std::vector<OpenStack>()> open_stacks;  // where each thread is
    std::function<void(const HangEvent&, const std::vector<OpenStack>&)> report;
    std::function<bool()> steps_expected = training_steps_expected;
  };
  HangWatchdog(HangTimeout timeout, Sources sources,
               HangTimeout startup = {HangTimeout::Mode::off, 0.0})
      : timeout_(timeout), startup_(startup), sources_(std::move(sources)) {}
  ~HangWatchdog() { stop(); }
  HangWatchdog(const HangWatchdog&) = delete;
  HangWatchdog& operator=(const HangWatchdog&) = delete;

  // Starts the thread unless it runs already, was stopped, or the timeout is `off` (setup calls
  // it at once when the start-up timeout is on, else has on_first_step call it). Throws
  // std::system_error without threads.
  void start();
  // Ends the thread (idempotent); nothing is reported afterwards and start() does nothing.
  void stop() noexcept;

 private:
  void run();

  HangTimeout timeout_;
  HangTimeout startup_;
  Sources sources_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lens::telemetry
