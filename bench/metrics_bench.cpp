// Recording cost of opentelemetry-cpp's metric instruments as setup_telemetry() builds them
// (exporter=none: a periodic reader collects and discards): a counter add and a histogram
// record with no attributes (opentelemetry-cpp 1.19 has no bound instruments; the empty
// attribute set is its cheapest path), a counter add with three attributes, and a lens gauge
// record. Single- and two-thread variants; the instruments are shared by the threads.
// The BM_Bound* rows measure lens's bound instruments (lens/metrics.hpp) on the same pipeline:
// a bound counter and a bound histogram (no attributes), and a lens counter whose attribute set
// of three is found through its per-thread binding cache.
// Each run sets its own metrics telemetry up and makes its instrument from it (thread 0, before
// the loop), then checks that the flush after the loop exported the instrument's points.
#include <benchmark/benchmark.h>
#include <opentelemetry/context/context.h>
#include <opentelemetry/metrics/sync_instruments.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <thread>

#include "bench_telemetry.hpp"
#include "lens/metrics.hpp"
#include "lens/telemetry.hpp"

namespace {

// Runs `loop(state, instrument)` with an instrument made by `make(meter)` on fresh telemetry.
// Thread 0 makes it; the other threads wait for it before their loop.
template <class Make, class Loop>
void measure(benchmark::State& state, Make make, Loop loop) {
  lens::Config config = lens::bench::exporting_none_config("metrics-bench");
  config.traces_enabled = false;
  using Instrument = decltype(make(*lens::bench::live()->meter()));
  static std::unique_ptr<Instrument> owned;
  static std::atomic<Instrument*> shared{nullptr};
  Instrument* instrument = nullptr;
  if (state.thread_index() == 0) {
    // The other threads wait for the instrument: a setup failure cannot leave them waiting.
    if (!lens::bench::start_telemetry(state, config)) std::abort();
    owned = std::make_unique<Instrument>(make(*lens::bench::live()->meter()));
    instrument = owned.get();
    shared.store(instrument, std::memory_order_release);
  } else {
    while ((instrument = shared.load(std::memory_order_acquire)) == nullptr) {
      std::this_thread::yield();
    }
  }
  loop(state, *instrument);
  if (state.thread_index() != 0) return;
  const lens::TelemetryStats stats = lens::bench::finish_telemetry(state);
  shared.store(nullptr);
  owned.reset();
  lens::bench::expect_at_least(state, "metric points exported", stats.metric_points_exported, 1);
}

void BM_Counter_Add_Bound(benchmark::State& state) {
  measure(
      state, [](auto& meter) { return meter.CreateUInt64Counter("bench.counter"); },
      [](benchmark::State& s, auto& c) {
        for (auto _ : s) c->Add(1);
      });
}
BENCHMARK(BM_Counter_Add_Bound)->Threads(1)->Threads(2);

void BM_Histogram_Record_Bound(benchmark::State& state) {
  measure(
      state, [](auto& meter) { return meter.CreateDoubleHistogram("bench.histogram"); },
      [](benchmark::State& s, auto& h) {
        const opentelemetry::context::Context context;
        double v = 0.0;
        for (auto _ : s) h->Record(v += 0.5, context);
      });
}
BENCHMARK(BM_Histogram_Record_Bound)->Threads(1)->Threads(2);

void BM_Counter_Add_3Attrs(benchmark::State& state) {
  measure(
      state, [](auto& meter) { return meter.CreateUInt64Counter("bench.counter"); },
      [](benchmark::State& s, auto& c) {
        for (auto _ : s) c->Add(1, {{"rank", 3}, {"phase", "forward"}, {"ok", true}});
      });
}
BENCHMARK(BM_Counter_Add_3Attrs)->Threads(1)->Threads(2);

void BM_BoundCounter_Add(benchmark::State& state) {
  measure(
      state,
      [](auto& meter) {
        return lens::metrics::create_bound_uint64_counter(meter, "bench.bound_counter");
      },
      [](benchmark::State& s, auto& c) {
        for (auto _ : s) c.add(1);
      });
}
BENCHMARK(BM_BoundCounter_Add)->Threads(1)->Threads(2);

void BM_BoundHistogram_Record(benchmark::State& state) {
  measure(
      state,
      [](auto& meter) {
        return lens::metrics::create_bound_double_histogram(meter, "bench.bound_histogram");
      },
      [](benchmark::State& s, auto& h) {
        double v = 0.0;
        for (auto _ : s) h.record(v += 0.5);
      });
}
BENCHMARK(BM_BoundHistogram_Record)->Threads(1)->Threads(2);

void BM_BoundCounter_Add_3Attrs_Lookup(benchmark::State& state) {
  measure(
      state,
      [](auto& meter) {
        return lens::metrics::make_counter<std::uint64_t>(meter, "bench.lens_counter");
      },
      [](benchmark::State& s, auto& c) {
        for (auto _ : s) c.add(1, {{"rank", 3}, {"phase", "forward"}, {"ok", true}});
      });
}
BENCHMARK(BM_BoundCounter_Add_3Attrs_Lookup)->Threads(1)->Threads(2);

void BM_Gauge_Record(benchmark::State& state) {
  measure(
      state, [](auto& meter) { return lens::metrics::create_double_gauge(meter, "bench.gauge"); },
      [](benchmark::State& s, auto& gauge) {
        double v = 0.0;
        for (auto _ : s) gauge.record(v += 1.0);
      });
}
BENCHMARK(BM_Gauge_Record)->Threads(1)->Threads(2);

}  // namespace
