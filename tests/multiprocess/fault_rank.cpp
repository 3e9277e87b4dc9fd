// One rank of the fault matrix test (fault_matrix_test.cpp): sets telemetry up from its
// environment (NEMO_LENS_*, OTEL_*, RANK/WORLD_SIZE), runs FAULT_STEPS steps at a fixed rate
// (one every FAULT_STEP_PERIOD_US), each producing spans with attributes, metric recordings and
// a log record on this (the training) thread, then shuts telemetry down with
// FAULT_SHUTDOWN_TIMEOUT_MS and prints one JSON line: what it produced, the handle's counters,
// the cost of each step on this thread, peak RSS and the shutdown time.
//
// A step's cost is measured around the telemetry calls only (the rest of the period is sleep):
// wall time, thread CPU time and this thread's context switches; lens's calls and the
// opentelemetry-cpp counter apart ("sdk_counter"). A voluntary switch means the
// thread slept (a lock, I/O): a step over 1 ms with one is "blocked". An involuntary one means
// it was preempted: on a loaded machine that stretches wall time without telemetry waiting, and
// the interrupts served meanwhile may be charged to the thread's CPU time.
#include <opentelemetry/metrics/sync_instruments.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "lens/config.hpp"
#include "lens/log.hpp"
#include "lens/metrics.hpp"
#include "lens/rank_info.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSpansPerStep = 6;  // step, 2 x (forward, backward), optimizer
constexpr int kLogsPerStep = 1;
constexpr int kMetricRecordingsPerStep = 5;

std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoll(value, nullptr, 10) : fallback;
}

std::int64_t thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// A "Vm...:" line of /proc/self/status, in bytes: VmRSS (resident now) or VmHWM (peak). Not
// getrusage's ru_maxrss: it survives execve, so a rank would report its launcher's peak.
std::uint64_t status_bytes(const std::string& key) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::stoull(line.substr(key.size() + 1)) * 1024;
  }
  return 0;
}

struct StepCost {
  std::int64_t wall_ns = 0;
  std::int64_t cpu_ns = 0;
  long voluntary = 0;    // context switches: the thread slept
  long involuntary = 0;  // the thread was preempted
  long minor_faults = 0;
  long major_faults = 0;
};

double us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Runs `calls` and measures them on this thread.
template <class Calls>
StepCost measure(Calls&& calls) {
  rusage before{};
  getrusage(RUSAGE_THREAD, &before);
  const std::int64_t cpu_start = thread_cpu_ns();
  const auto start = Clock::now();
  calls();
  const auto end = Clock::now();
  const std::int64_t cpu_end = thread_cpu_ns();
  rusage after{};
  getrusage(RUSAGE_THREAD, &after);
  return {std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count(),
          cpu_end - cpu_start,
          after.ru_nvcsw - before.ru_nvcsw,
          after.ru_nivcsw - before.ru_nivcsw,
          after.ru_minflt - before.ru_minflt,
          after.ru_majflt - before.ru_majflt};
}

// Wall time quantiles, CPU time and the steps over 1 ms, classified by their context switches.
nlohmann::json summarize(const std::vector<StepCost>& costs) {
  std::vector<std::int64_t> wall;
  wall.reserve(costs.size());
  std::int64_t cpu_max = 0;
  std::int64_t over = 0, over_blocked = 0, over_preempted = 0, over_unexplained = 0;
  std::int64_t with_voluntary = 0;
  std::int64_t cpu_over = 0, cpu_over_not_preempted = 0, cpu_above_wall = 0;
  std::int64_t wall_max_not_preempted = 0;
  nlohmann::json slow_steps = nlohmann::json::array();  // the first 20 over 1 ms, to explain them
  for (std::size_t i = 0; i < costs.size(); ++i) {
    const StepCost& c = costs[i];
    wall.push_back(c.wall_ns);
    // One thread cannot run longer than the step lasted: a thread CPU clock reading above the
    // wall time (seen once on this VM: 1092 us of CPU in a 56 us step) is an accounting jump of
    // the clock, not work; it is counted apart and the step's CPU time taken as its wall time.
    if (c.cpu_ns > c.wall_ns) ++cpu_above_wall;
    const std::int64_t cpu_ns = std::min(c.cpu_ns, c.wall_ns);
    cpu_max = std::max(cpu_max, cpu_ns);
    if (c.voluntary > 0) ++with_voluntary;
    if (c.involuntary == 0) wall_max_not_preempted = std::max(wall_max_not_preempted, c.wall_ns);
    // Without IRQ time accounting (Debian's kernels) interrupts and softirqs are charged to the
    // thread they interrupt: a preempted step's CPU time may include other work.
    if (cpu_ns > 1'000'000) {
      ++cpu_over;
      if (c.involuntary == 0) ++cpu_over_not_preempted;
    }
    if (c.wall_ns <= 1'000'000) continue;
    ++over;
    if (slow_steps.size() < 20) {
      slow_steps.push_back({{"step", i},
                            {"wall_us", us(c.wall_ns)},
                            {"cpu_us", us(c.cpu_ns)},
                            {"voluntary", c.voluntary},
                            {"involuntary", c.involuntary},
                            {"minor_faults", c.minor_faults},
                            {"major_faults", c.major_faults}});
    }
    if (c.voluntary > 0) {
      ++over_blocked;
    } else if (c.involuntary > 0) {
      ++over_preempted;
    } else {
      ++over_unexplained;  // neither: the hypervisor took the CPU (steal), invisible here
    }
  }
  std::sort(wall.begin(), wall.end());
  const auto quantile = [&wall](double q) {
    return wall.empty() ? 0
                        : wall[static_cast<std::size_t>(q * static_cast<double>(wall.size() - 1))];
  };
  std::int64_t wall_sum = 0;
  for (std::int64_t w : wall) wall_sum += w;
  return {
      {"step_us",
       {{"mean", wall.empty() ? 0.0 : us(wall_sum) / static_cast<double>(wall.size())},
        {"p50", us(quantile(0.5))},
        {"p99", us(quantile(0.99))},
        {"max", us(wall.empty() ? 0 : wall.back())},
        {"max_not_preempted", us(wall_max_not_preempted)},
        {"cpu_max", us(cpu_max)}}},
      {"steps_over_1ms",
       {{"all", over},
        {"blocked", over_blocked},
        {"preempted", over_preempted},
        {"unexplained", over_unexplained},
        {"first", slow_steps}}},
      {"steps_with_voluntary_switch", with_voluntary},
      {"steps_cpu_over_1ms", {{"all", cpu_over}, {"not_preempted", cpu_over_not_preempted}}},
      {"cpu_readings_above_wall", cpu_above_wall},
  };
}

}  // namespace

int main() {
  const std::int64_t steps = env_int("FAULT_STEPS", 1000);
  const auto period = std::chrono::microseconds(env_int("FAULT_STEP_PERIOD_US", 2500));
  const auto shutdown_timeout =
      std::chrono::milliseconds(env_int("FAULT_SHUTDOWN_TIMEOUT_MS", 2000));

  auto config = lens::Config::from_env();
  auto rank = lens::RankInfo::detect();
  if (!config.ok() || !rank.ok()) {
    std::fprintf(stderr, "fault_rank: %s%s\n", config.message().c_str(), rank.message().c_str());
    return 10;
  }
  const std::uint64_t rss_before_setup = status_bytes("VmRSS");
  auto handle = lens::setup_telemetry(*config, *rank);
  if (!handle.ok()) {
    std::fprintf(stderr, "fault_rank: %s\n", handle.message().c_str());
    return 11;
  }
  if (!handle->is_exporting()) {
    std::fprintf(stderr, "fault_rank: rank %d does not export\n", rank->rank);
    return 12;
  }
  lens::setup_logging_bridge(lens::log::Level::info);
  auto meter = handle->meter();
  // Lens's bound instruments and an opentelemetry-cpp SDK counter, as a trainer uses both.
  auto step_counter = lens::metrics::create_bound_uint64_counter(*meter, "fault.steps");
  auto tokens = lens::metrics::create_bound_uint64_counter(*meter, "fault.tokens");
  auto step_time =
      lens::metrics::create_bound_double_histogram(*meter, "fault.step_time", {}, "", "ms");
  auto loss = lens::metrics::create_double_gauge(*meter, "fault.loss");
  auto samples = meter->CreateUInt64Counter("fault.samples");
  const std::uint64_t rss_after_setup = status_bytes("VmRSS");

  // Lens's own calls and the opentelemetry-cpp counter are measured apart: the SDK's
  // synchronous instruments take a spin lock that its collection holds, and a contended one
  // sleeps 1 ms (opentelemetry/common/spin_lock_mutex.h).
  std::vector<StepCost> costs(static_cast<std::size_t>(steps));
  std::vector<StepCost> sdk_costs(static_cast<std::size_t>(steps));
  auto next = Clock::now();
  for (std::int64_t i = 0; i < steps; ++i) {
    const auto index = static_cast<std::size_t>(i);
    costs[index] = measure([&] {
      LENS_SPAN(lens::SpanSite("fault.train_step", "step"), {"iteration", i},
                {"world_size", rank->world_size});
      for (int microbatch = 0; microbatch < 2; ++microbatch) {
        {
          LENS_SPAN(lens::SpanSite("fault.forward", "forward_backward"),
                    {"microbatch", microbatch});
        }
        {
          LENS_SPAN(lens::SpanSite("fault.backward", "forward_backward"),
                    {"microbatch", microbatch});
        }
      }
      { LENS_SPAN(lens::SpanSite("fault.optimizer_step", "optimizer"), {"learning_rate", 1e-4}); }
      step_counter.add(1);
      tokens.add(4096);
      step_time.record(static_cast<double>(period.count()) / 1000.0);
      loss.record(2.0 + 1.0 / static_cast<double>(i + 1));
      lens::log::emit(lens::log::Level::info, "step done", {{"iteration", i}});
    });
    sdk_costs[index] = measure([&] { samples->Add(8, {{"phase", "train"}}); });
    next += period;
    std::this_thread::sleep_until(next);
  }

  const auto shutdown_start = Clock::now();
  const lens::Status shutdown = handle->shutdown(shutdown_timeout);
  const double shutdown_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - shutdown_start).count();
  lens::remove_logging_bridge();
  const lens::TelemetryStats stats = handle->stats();
  const std::uint64_t rss_peak = status_bytes("VmHWM");

  nlohmann::json out = {
      {"rank", rank->rank},
      {"steps", steps},
      {"produced",
       {{"spans", steps * kSpansPerStep},
        {"logs", steps * kLogsPerStep},
        {"metric_recordings", steps * kMetricRecordingsPerStep}}},
      {"stats",
       {{"spans_started", stats.spans_started},
        {"spans_ended", stats.spans_ended},
        {"spans_exported", stats.spans_exported},
        {"spans_dropped", stats.spans_dropped},
        {"spans_failed", stats.spans_failed},
        {"metric_points_exported", stats.metric_points_exported},
        {"metric_points_failed", stats.metric_points_failed},
        {"log_records_emitted", stats.log_records_emitted},
        {"log_records_exported", stats.log_records_exported},
        {"log_records_failed", stats.log_records_failed},
        {"log_records_dropped", stats.log_records_dropped},
        {"exports_failed", stats.exports_failed},
        {"export_retries", stats.export_retries},
        {"items_rejected", stats.items_rejected}}},
      {"rss",
       {{"before_setup", rss_before_setup}, {"after_setup", rss_after_setup}, {"peak", rss_peak}}},
      {"shutdown", {{"ms", shutdown_ms}, {"ok", shutdown.ok()}, {"message", shutdown.message()}}},
  };
  out.update(summarize(costs));  // lens's calls: step_us, steps_over_1ms, ...
  out["sdk_counter"] = summarize(sdk_costs);
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
