// Cost of lens::log: a call below the bridge's level (one relaxed load and a branch, nothing
// formatted), and a recorded call (body formatted on the stack, one record with the active span's
// ids written into the thread's buffer; lens's export thread drains it to exporter=none).
// Single- and two-thread variants; the `dropped` counter shows that no record was lost.
// Every 65536 calls the benchmark waits, off the clock, for the export thread to catch up.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "bench_support.hpp"
#include "lens/log.hpp"
#include "lens/rank_info.hpp"
#include "lens/telemetry.hpp"

namespace {

lens::TelemetryHandle* ensure_logging() {
  static auto* h = [] {
    lens::Config config = lens::bench::exporting_none_config("log-bench");
    config.traces_enabled = false;
    config.metrics_enabled = false;
    config.logs_enabled = true;
    // A queue that the discarding export thread keeps from filling: records are not dropped.
    config.otel = lens::OtelSettings::from_env(lens::Env::from(
        {{"OTEL_BLRP_MAX_QUEUE_SIZE", "1048576"}, {"OTEL_BLRP_SCHEDULE_DELAY", "10"}}));
    lens::SetupOverrides overrides;
    overrides.env = lens::Env::from({});
    // In a run of every benchmark, another family's telemetry may still be live: replace it.
    overrides.allow_reinit = true;
    auto made =
        lens::setup_telemetry(config, *lens::RankInfo::make(0, 1), {}, std::move(overrides));
    if (!made.ok()) {
      std::fprintf(stderr, "lens_bench: setup_telemetry failed: %s\n", made.message().c_str());
      std::abort();
    }
    return new lens::TelemetryHandle(*made);
  }();
  return h;
}

void BM_Log_Disabled(benchmark::State& state) {
  ensure_logging();
  lens::setup_logging_bridge(lens::log::Level::info);
  int step = 0;
  for (auto _ : state) lens::log::debug("step ", ++step, " done");
}
BENCHMARK(BM_Log_Disabled)->Threads(1)->Threads(2);

void BM_Log_Recorded(benchmark::State& state) {
  lens::TelemetryHandle* handle = ensure_logging();
  lens::setup_logging_bridge(lens::log::Level::info);
  const std::uint64_t dropped_before = handle->stats().log_records_dropped;
  int step = 0;
  for (auto _ : state) {
    lens::log::info("step ", ++step, " done");
    // The export thread converts fewer records per second than this loop writes: it catches
    // up off the clock, so that every timed call records (instead of measuring the drop path).
    if ((step & 0xFFFF) == 0) {
      state.PauseTiming();
      static_cast<void>(handle->force_flush(std::chrono::seconds(30)));
      state.ResumeTiming();
    }
  }
  if (state.thread_index() == 0) {
    state.counters["dropped"] =
        static_cast<double>(handle->stats().log_records_dropped - dropped_before);
  }
}
BENCHMARK(BM_Log_Recorded)->Threads(1)->Threads(2);

}  // namespace
