// Recording cost of opentelemetry-cpp's metric instruments as setup_telemetry() builds them
// (exporter=none: a periodic reader collects and discards): a counter add and a histogram
// record with no attributes (opentelemetry-cpp 1.19 has no bound instruments; the empty
// attribute set is its cheapest path), a counter add with three attributes, and a lens gauge
// record. Single- and two-thread variants; the instruments are shared by the threads.
// The BM_Bound* rows measure lens's bound instruments (lens/metrics.hpp) on the same pipeline:
// a bound counter and a bound histogram (no attributes), and a lens counter whose attribute set
// of three is found through its per-thread binding cache.
#include <benchmark/benchmark.h>
#include <opentelemetry/context/context.h>
#include <opentelemetry/metrics/sync_instruments.h>

#include <cstdio>
#include <cstdlib>

#include "bench_support.hpp"
#include "lens/metrics.hpp"
#include "lens/rank_info.hpp"
#include "lens/telemetry.hpp"

namespace {

lens::TelemetryHandle& handle() {
  static auto* h = [] {
    lens::Config config = lens::bench::exporting_none_config("metrics-bench");
    config.traces_enabled = false;
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
  return *h;
}

auto& counter() {
  static auto* c = new auto(handle().meter()->CreateUInt64Counter("bench.counter"));
  return **c;
}
auto& histogram() {
  static auto* h = new auto(handle().meter()->CreateDoubleHistogram("bench.histogram"));
  return **h;
}

void BM_Counter_Add_Bound(benchmark::State& state) {
  auto& c = counter();
  for (auto _ : state) c.Add(1);
}
BENCHMARK(BM_Counter_Add_Bound)->Threads(1)->Threads(2);

void BM_Histogram_Record_Bound(benchmark::State& state) {
  auto& h = histogram();
  const opentelemetry::context::Context context;
  double v = 0.0;
  for (auto _ : state) h.Record(v += 0.5, context);
}
BENCHMARK(BM_Histogram_Record_Bound)->Threads(1)->Threads(2);

void BM_Counter_Add_3Attrs(benchmark::State& state) {
  auto& c = counter();
  for (auto _ : state) {
    c.Add(1, {{"rank", 3}, {"phase", "forward"}, {"ok", true}});
  }
}
BENCHMARK(BM_Counter_Add_3Attrs)->Threads(1)->Threads(2);

void BM_BoundCounter_Add(benchmark::State& state) {
  static auto* c = new lens::metrics::BoundCounter<std::uint64_t>(
      lens::metrics::create_bound_uint64_counter(*handle().meter(), "bench.bound_counter"));
  for (auto _ : state) c->add(1);
}
BENCHMARK(BM_BoundCounter_Add)->Threads(1)->Threads(2);

void BM_BoundHistogram_Record(benchmark::State& state) {
  static auto* h = new lens::metrics::BoundHistogram<double>(
      lens::metrics::create_bound_double_histogram(*handle().meter(), "bench.bound_histogram"));
  double v = 0.0;
  for (auto _ : state) h->record(v += 0.5);
}
BENCHMARK(BM_BoundHistogram_Record)->Threads(1)->Threads(2);

void BM_BoundCounter_Add_3Attrs_Lookup(benchmark::State& state) {
  static auto* c = new lens::metrics::Counter<std::uint64_t>(
      lens::metrics::make_counter<std::uint64_t>(*handle().meter(), "bench.lens_counter"));
  for (auto _ : state) {
    c->add(1, {{"rank", 3}, {"phase", "forward"}, {"ok", true}});
  }
}
BENCHMARK(BM_BoundCounter_Add_3Attrs_Lookup)->Threads(1)->Threads(2);

void BM_Gauge_Record(benchmark::State& state) {
  static auto* gauge = new lens::metrics::Gauge<double>(
      lens::metrics::create_double_gauge(*handle().meter(), "bench.gauge"));
  double v = 0.0;
  for (auto _ : state) gauge->record(v += 1.0);
}
BENCHMARK(BM_Gauge_Record)->Threads(1)->Threads(2);

}  // namespace
