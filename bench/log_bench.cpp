// Cost of lens::log: a call below the bridge's level (one relaxed load and a branch, nothing
// formatted), and a recorded call (body formatted on the stack, one record with the active span's
// ids written into the thread's buffer; lens's export thread drains it to exporter=none).
// Single- and two-thread variants. Each run sets its own logging telemetry up and checks after
// the loop that the disabled calls emitted nothing and the recorded ones were all exported.
// Every 65536 calls the recorded benchmark waits, off the clock, for the export thread.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include "bench_telemetry.hpp"
#include "lens/log.hpp"
#include "lens/telemetry.hpp"

namespace {

lens::Config logging_config() {
  lens::Config config = lens::bench::exporting_none_config("log-bench");
  config.traces_enabled = false;
  config.metrics_enabled = false;
  config.logs_enabled = true;
  // A queue that the discarding export thread keeps from filling: records are not dropped.
  config.otel = lens::OtelSettings::from_env(lens::Env::from(
      {{"OTEL_BLRP_MAX_QUEUE_SIZE", "1048576"}, {"OTEL_BLRP_SCHEDULE_DELAY", "10"}}));
  return config;
}

// The bridge at `level`, by thread 0 before the loop.
bool start(benchmark::State& state, lens::log::Level level) {
  if (!lens::bench::start_telemetry(state, logging_config())) return false;
  if (state.thread_index() == 0 && !lens::setup_logging_bridge(level)) {
    state.SkipWithError("setup_logging_bridge failed");
    return false;
  }
  return true;
}

lens::TelemetryStats finish(benchmark::State& state) {
  if (state.thread_index() == 0) lens::remove_logging_bridge();
  return lens::bench::finish_telemetry(state);
}

void BM_Log_Disabled(benchmark::State& state) {
  if (!start(state, lens::log::Level::info)) return;
  int step = 0;
  for (auto _ : state) lens::log::debug("step ", ++step, " done");
  const lens::TelemetryStats stats = finish(state);
  if (state.thread_index() == 0) {
    lens::bench::expect_equal(state, "log records emitted below the level",
                              stats.log_records_emitted, 0);
  }
}
BENCHMARK(BM_Log_Disabled)->Threads(1)->Threads(2);

void BM_Log_Recorded(benchmark::State& state) {
  if (!start(state, lens::log::Level::info)) return;
  int step = 0;
  bool warm = false;
  for (auto _ : state) {
    if (!warm) [[unlikely]] {
      // Off the clock, once per run: this thread's ring and the pipeline's chunk pool are new
      // (each run has its own telemetry); fill and drain them once, so that the loop measures
      // the steady state, not the first touch of the buffer's pages.
      state.PauseTiming();
      for (int i = 0; i < 2 * 0x10000; ++i) lens::log::info("warm-up ", i);
      if (lens::bench::live()) {
        static_cast<void>(lens::bench::live()->force_flush(std::chrono::seconds(30)));
      }
      warm = true;
      state.ResumeTiming();
    }
    lens::log::info("step ", ++step, " done");
    // The export thread converts fewer records per second than this loop writes: it catches
    // up off the clock, so that every timed call records (instead of measuring the drop path).
    if ((step & 0xFFFF) == 0) {
      state.PauseTiming();
      if (lens::bench::live()) {
        static_cast<void>(lens::bench::live()->force_flush(std::chrono::seconds(30)));
      }
      state.ResumeTiming();
    }
  }
  const lens::TelemetryStats stats = finish(state);
  if (state.thread_index() == 0) {
    const auto calls = static_cast<std::uint64_t>(state.iterations() * state.threads());
    state.counters["dropped"] = static_cast<double>(stats.log_records_dropped);
    lens::bench::expect_at_least(state, "log records exported", stats.log_records_exported, calls);
    lens::bench::expect_equal(state, "log records dropped", stats.log_records_dropped, 0);
  }
}
BENCHMARK(BM_Log_Recorded)->Threads(1)->Threads(2);

}  // namespace
