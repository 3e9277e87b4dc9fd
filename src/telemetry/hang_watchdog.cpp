// The hang watchdog's decision, its text and its thread (see hang_watchdog.hpp).
#include "telemetry/hang_watchdog.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

namespace lens::telemetry {
namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

std::int64_t to_ns(double seconds) { return static_cast<std::int64_t>(seconds * 1e9); }

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", seconds);
  return text;
}

// How often the thread looks: often enough for a report within a quarter of the timeout of
// being due, at most once every 10 ms, at least once a second.
std::chrono::milliseconds poll_interval(const HangTimeout& timeout) {
  if (timeout.mode != HangTimeout::Mode::fixed) return std::chrono::milliseconds(1000);
  const auto quarter = static_cast<std::int64_t>(timeout.seconds * 250.0);
  return std::chrono::milliseconds(std::clamp<std::int64_t>(quarter, 10, 1000));
}

std::atomic<bool> g_steps_expected{false};

}  // namespace

bool training_steps_expected() noexcept { return g_steps_expected.load(std::memory_order_relaxed); }

std::optional<double> HangMonitor::startup_seconds() const {
  if (timeout_.mode == HangTimeout::Mode::off) return std::nullopt;
  switch (startup_.mode) {
    case HangTimeout::Mode::off:
      return std::nullopt;
    case HangTimeout::Mode::fixed:
      return startup_.seconds;
    case HangTimeout::Mode::automatic:
      break;
  }
  return kAutoStartupTimeoutSeconds;
}

double HangMonitor::timeout_seconds(const StepProgress& progress) const {
  if (timeout_.mode == HangTimeout::Mode::fixed) return timeout_.seconds;
  return std::max(kAutoTimeoutFloorSeconds,
                  kAutoTimeoutFactor * median(progress.recent_step_seconds));
}

std::optional<HangEvent> HangMonitor::check(const StepProgress& progress, std::int64_t now_ns,
                                            bool steps_expected) {
  if (timeout_.mode == HangTimeout::Mode::off) return std::nullopt;
  if (hanging_) {
    if (progress.steps != steps_at_hang_) {
      hanging_ = false;
      HangEvent resumed{HangEvent::Kind::resumed,
                        reports_,
                        static_cast<double>(progress.last_step_ns - since_ns_) / 1e9,
                        hang_timeout_s_,
                        steps_at_hang_,
                        startup_hang_};
      return resumed;
    }
    // The next report when the hang has lasted twice as long, at most kMaxRepeatSeconds later.
    const std::int64_t gap = std::min(last_report_ns_ - since_ns_, to_ns(kMaxRepeatSeconds));
    if (now_ns < last_report_ns_ + gap) return std::nullopt;
    last_report_ns_ += gap;
    return HangEvent{
        HangEvent::Kind::hang, ++reports_,     static_cast<double>(now_ns - since_ns_) / 1e9,
        hang_timeout_s_,       steps_at_hang_, startup_hang_};
  }
  if (progress.steps == 0) {
    // Before the first step only a process that trains is watched, with the start-up timeout.
    const std::optional<double> startup = startup_seconds();
    if (!steps_expected || !startup || now_ns - armed_ns_ < to_ns(*startup)) return std::nullopt;
    hanging_ = true;
    startup_hang_ = true;
    reports_ = 1;
    steps_at_hang_ = 0;
    since_ns_ = armed_ns_;
    last_report_ns_ = armed_ns_ + to_ns(*startup);
    hang_timeout_s_ = *startup;
    return HangEvent{
        HangEvent::Kind::hang, 1, static_cast<double>(now_ns - armed_ns_) / 1e9, *startup, 0, true};
  }
  // Watching starts at the first finished step: a process that never trains never reports.
  const std::int64_t since = std::max(progress.last_step_ns, armed_ns_);
  const double timeout = timeout_seconds(progress);
  if (now_ns - since < to_ns(timeout)) return std::nullopt;
  hanging_ = true;
  startup_hang_ = false;
  reports_ = 1;
  steps_at_hang_ = progress.steps;
  since_ns_ = since;
  last_report_ns_ = since + to_ns(timeout);
  hang_timeout_s_ = timeout;
  return HangEvent{HangEvent::Kind::hang, 1, static_cast<double>(now_ns - since) / 1e9, timeout,
                   progress.steps};
}

const OpenStack* stuck_stack(const std::vector<OpenStack>& stacks) {
  const OpenStack* stuck = nullptr;
  for (const OpenStack& stack : stacks) {
    if (stack.empty()) continue;
    if (stuck == nullptr || stack.back().open_s > stuck->back().open_s) stuck = &stack;
  }
  return stuck;
}

std::string stack_text(const OpenStack& stack) {
  std::string text;
  for (const OpenSpanAge& span : stack) {
    if (!text.empty()) text += " > ";
    text += span.name + " (" + seconds_text(span.open_s) + ")";
  }
  return text;
}

std::string event_text(const HangEvent& event, const std::vector<OpenStack>& stacks) {
  if (event.kind == HangEvent::Kind::resumed) {
    return "progress resumed: a step finished after " + seconds_text(event.stalled_s) +
           " without one";
  }
  std::string text = std::string(event.report > 1 ? "still no step" : "no step") +
                     (event.startup ? " finished since start-up for " : " finished for ") +
                     seconds_text(event.stalled_s);
  if (event.startup) {
    text += " (start-up timeout " + seconds_text(event.timeout_s) + "): ";
  } else {
    text += " (hang timeout " + seconds_text(event.timeout_s) + ", " + std::to_string(event.steps) +
            (event.steps == 1 ? " step" : " steps") + " so far): ";
  }
  const OpenStack* stuck = stuck_stack(stacks);
  if (stuck == nullptr) {
    text += "no open spans";
  } else {
    text += stack_text(*stuck);
    const auto others = std::count_if(stacks.begin(), stacks.end(), [&](const OpenStack& s) {
      return !s.empty() && &s != stuck;
    });
    if (others > 0) {
      text += "; " + std::to_string(others) +
              (others == 1 ? " other thread with open spans" : " other threads with open spans");
    }
  }
  if (event.report > 1) text += " (report " + std::to_string(event.report) + ")";
  return text;
}

void HangWatchdog::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || thread_.joinable() || timeout_.mode == HangTimeout::Mode::off) return;
  thread_ = std::thread([this] { run(); });
}

void HangWatchdog::stop() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // start() no longer touches thread_ once stopping_ is set.
  if (thread_.joinable()) thread_.join();
}

void HangWatchdog::run() {
  HangMonitor monitor(timeout_, sources_.now_ns(), startup_);
  std::chrono::milliseconds interval = poll_interval(timeout_);
  if (const std::optional<double> startup = monitor.startup_seconds()) {
    interval = std::min(interval, poll_interval({HangTimeout::Mode::fixed, *startup}));
  }
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval, [this] { return stopping_; })) {
    lock.unlock();
    try {
      const bool expected = sources_.steps_expected ? sources_.steps_expected() : false;
      const std::optional<HangEvent> event =
          monitor.check(sources_.progress(), sources_.now_ns(), expected);
      if (event) {
        const std::vector<OpenStack> stacks = event->kind == HangEvent::Kind::hang
                                                  ? sources_.open_stacks()
                                                  : std::vector<OpenStack>();
        sources_.report(*event, stacks);
      }
    } catch (...) {
      // Out of memory: this look is skipped; the next one tries again.
    }
    lock.lock();
  }
}

}  // namespace lens::telemetry

namespace lens {

void expect_training_steps() noexcept {
  telemetry::g_steps_expected.store(true, std::memory_order_relaxed);
}

}  // namespace lens
