// The telemetry one Google Benchmark measures. Each benchmark sets its own telemetry up before
// its loop and shuts it down after, so that nothing one benchmark leaves behind changes what
// another measures, in whatever order they run; and each checks its precondition afterwards
// (telemetry live, what it records produced and exported) and fails loudly with SkipWithError
// when it does not hold (CTest's bench test fails on "ERROR OCCURRED").
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "bench_support.hpp"
#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/telemetry.hpp"

namespace lens::bench {

// The telemetry of the benchmark running now; empty between benchmarks.
inline std::optional<TelemetryHandle>& live() {
  static std::optional<TelemetryHandle> handle;
  return handle;
}

// Thread 0 sets `config` up before the loop (google-benchmark starts every thread's loop
// together, after this). False (and the benchmark skipped with the reason) when setup fails.
inline bool start_telemetry(benchmark::State& state, const Config& config) {
  if (state.thread_index() != 0) return true;
  SetupOverrides overrides;
  overrides.env = Env::from({});
  // A benchmark that stopped early (skipped) may have left its telemetry: replace it.
  overrides.allow_reinit = true;
  auto made = setup_telemetry(config, *RankInfo::make(0, 1), {}, std::move(overrides));
  if (!made.ok()) {
    std::fprintf(stderr, "lens_bench: setup_telemetry failed: %s\n", made.message().c_str());
    state.SkipWithError(("setup_telemetry failed: " + made.message()).c_str());
    return false;
  }
  live() = *made;
  if (!live()->is_exporting()) {
    state.SkipWithError("the benchmark's telemetry is not exporting");
    return false;
  }
  return true;
}

// Thread 0, after the loop: flushes, reads the stats, shuts the telemetry down. The stats are
// those after the flush (everything the loop recorded has reached the exporter).
inline TelemetryStats finish_telemetry(benchmark::State& state) {
  TelemetryStats stats;
  if (state.thread_index() != 0 || !live()) return stats;
  if (Status flushed = live()->force_flush(std::chrono::seconds(60)); !flushed.ok()) {
    state.SkipWithError(("flush failed: " + flushed.message()).c_str());
  }
  stats = live()->stats();
  static_cast<void>(live()->shutdown(std::chrono::seconds(30)));
  live().reset();
  return stats;
}

// Fails the benchmark unless `actual` >= `at_least`; `what` names the quantity.
inline void expect_at_least(benchmark::State& state, const char* what, std::uint64_t actual,
                            std::uint64_t at_least) {
  if (actual >= at_least) return;
  state.SkipWithError((std::string("precondition failed: ") + what + " " + std::to_string(actual) +
                       ", expected at least " + std::to_string(at_least))
                          .c_str());
}

inline void expect_equal(benchmark::State& state, const char* what, std::uint64_t actual,
                         std::uint64_t expected) {
  if (actual == expected) return;
  state.SkipWithError((std::string("precondition failed: ") + what + " " + std::to_string(actual) +
                       ", expected " + std::to_string(expected))
                          .c_str());
}

}  // namespace lens::bench
