// Benchmarks of the span primitives against two clock reads and against opentelemetry-cpp used
// directly: a site whose group is off, a non-exporting rank, a recorded span (the whole lens
// pipeline built by setup_telemetry with exporter=none), three nested spans, the same span made
// with opentelemetry-cpp
// alone (BatchSpanProcessor over a discarding exporter), a span dropped by the sampler, and
// W3C propagation. Single- and two-thread variants; thread 0 sets up before the loop
// (google-benchmark starts all threads' loops together).
#include <benchmark/benchmark.h>
#include <opentelemetry/sdk/trace/batch_span_processor.h>
#include <opentelemetry/sdk/trace/batch_span_processor_options.h>
#include <opentelemetry/sdk/trace/exporter.h>
#include <opentelemetry/sdk/trace/span_data.h>
#include <opentelemetry/sdk/trace/tracer_provider.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "bench_telemetry.hpp"
#include "lens/config.hpp"
#include "lens/groups.hpp"
#include "lens/propagation.hpp"
#include "lens/rank_info.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"

namespace {

namespace sdktrace = opentelemetry::sdk::trace;

// Accepts every batch and drops it: measures the pipeline without I/O.
class DiscardingExporter final : public sdktrace::SpanExporter {
 public:
  std::unique_ptr<sdktrace::Recordable> MakeRecordable() noexcept override {
    return std::make_unique<sdktrace::SpanData>();
  }
  opentelemetry::sdk::common::ExportResult Export(
      const opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>& spans) noexcept
      override {
    benchmark::DoNotOptimize(spans.size());
    return opentelemetry::sdk::common::ExportResult::kSuccess;
  }
  bool ForceFlush(std::chrono::microseconds /*timeout*/) noexcept override { return true; }
  bool Shutdown(std::chrono::microseconds /*timeout*/) noexcept override { return true; }
};

// Providers live for the whole process (leaked): shutting a batch processor down inside a
// benchmark would be timed noise.
sdktrace::TracerProvider& recording_provider() {
  static auto* provider =
      new sdktrace::TracerProvider(std::make_unique<sdktrace::BatchSpanProcessor>(
          std::make_unique<DiscardingExporter>(), sdktrace::BatchSpanProcessorOptions{}));
  return *provider;
}

// A lens exporting rank as setup_telemetry() builds it (exporter=none: the whole pipeline runs,
// the export thread converts every span into the exporter's recordable, nothing is sent). Made
// by thread 0 before the loop and shut down after it, so that each benchmark measures its own
// pipeline.
bool lens_setup(benchmark::State& state, const lens::Env::Map& otel = {}) {
  lens::Config config = lens::bench::exporting_none_config("bench");
  config.span_groups = "step";
  config.otel = lens::OtelSettings::from_env(lens::Env::from(otel));
  return lens::bench::start_telemetry(state, config);
}

// Every kDrainEvery iterations the export thread is given time to catch up, off the clock, so
// that the loop measures what the recording thread pays per span while the buffer has room (a
// training step records far fewer spans than a benchmark loop; see BENCHMARKS.md for the export
// side's own rate). The "dropped" counter shows that nothing was lost.
constexpr std::int64_t kDrainEvery = 1 << 16;

void drain_off_the_clock(benchmark::State& state, std::int64_t i) {
  if ((i & (kDrainEvery - 1)) != 0) return;
  state.PauseTiming();
  if (lens::bench::live()) {
    static_cast<void>(lens::bench::live()->force_flush(std::chrono::seconds(30)));
  }
  state.ResumeTiming();
}

// After the loop (thread 0): every span the loop made (`per_iteration` a loop) was recorded
// and exported, none dropped.
void lens_teardown(benchmark::State& state, std::uint64_t per_iteration = 1) {
  const lens::TelemetryStats stats = lens::bench::finish_telemetry(state);
  if (state.thread_index() != 0) return;
  const auto spans =
      static_cast<std::uint64_t>(state.iterations() * state.threads()) * per_iteration;
  state.counters["dropped"] = static_cast<double>(stats.spans_dropped);
  lens::bench::expect_at_least(state, "spans exported", stats.spans_exported, spans);
  lens::bench::expect_equal(state, "spans dropped", stats.spans_dropped, 0);
}

void setup(benchmark::State& state, const std::set<std::string>& groups) {
  if (state.thread_index() == 0) lens::set_enabled_span_groups(groups);
}

void teardown(benchmark::State& state) {
  if (state.thread_index() == 0) {
    lens::set_enabled_span_groups({});
  }
}

void BM_Baseline_TwoClockReads(benchmark::State& state) {
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    auto end = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(start);
    benchmark::DoNotOptimize(end);
  }
}
BENCHMARK(BM_Baseline_TwoClockReads)->Threads(1)->Threads(2);

// The instrumented site used by every lens benchmark: LENS_SPAN with two attributes. Always
// inlined: LENS_SPAN is a macro, so in a program the site is part of the instrumented function;
// a call to this helper would be the benchmark's cost, not lens's.
[[gnu::always_inline]] inline void site(std::int64_t iteration) {
  LENS_SPAN(lens::SpanSite("megatron.train_step", "step"), {"iteration", iteration},
            {"microbatch", 4});
  benchmark::ClobberMemory();
}

void BM_Span_GroupDisabled(benchmark::State& state) {
  // Another group on, this site's group off: one relaxed load and a branch.
  setup(state, {"job"});
  if (state.thread_index() == 0 &&
      (lens::is_span_group_enabled("step") || !lens::is_span_group_enabled("job"))) {
    state.SkipWithError("precondition failed: group `step` must be off and `job` on");
  }
  std::int64_t i = 0;
  for (auto _ : state) {
    site(++i);
  }
  teardown(state);
}
BENCHMARK(BM_Span_GroupDisabled)->Threads(1)->Threads(2);

void BM_Span_NotExporting(benchmark::State& state) {
  // A non-exporting rank: no group enabled.
  setup(state, {});
  if (state.thread_index() == 0 && !lens::enabled_span_groups().empty()) {
    state.SkipWithError("precondition failed: no span group may be enabled");
  }
  std::int64_t i = 0;
  for (auto _ : state) {
    site(++i);
  }
  teardown(state);
}
BENCHMARK(BM_Span_NotExporting)->Threads(1)->Threads(2);

// A recorded span with two attributes.
void BM_Span_Recorded_2Attrs(benchmark::State& state) {
  if (!lens_setup(state)) return;
  std::int64_t i = 0;
  for (auto _ : state) {
    site(++i);
    drain_off_the_clock(state, i);
  }
  lens_teardown(state);
}
BENCHMARK(BM_Span_Recorded_2Attrs)->Threads(1)->Threads(2);

// Three nested native spans (a step, a microbatch, a forward pass), no attributes.
void BM_Span_Nested3(benchmark::State& state) {
  if (!lens_setup(state)) return;
  std::int64_t i = 0;
  for (auto _ : state) {
    drain_off_the_clock(state, ++i);
    LENS_SPAN(lens::SpanSite("megatron.train_step", "step"));
    {
      LENS_SPAN(lens::SpanSite("megatron.microbatch", "step"));
      {
        LENS_SPAN(lens::SpanSite("megatron.forward", "step"));
        benchmark::ClobberMemory();
      }
    }
  }
  lens_teardown(state, 3);
}
BENCHMARK(BM_Span_Nested3)->Threads(1)->Threads(2);

// The same span made directly with opentelemetry-cpp: started, made the active span (as
// LENS_SPAN does, so that children nest under it), two attributes, ended. Plain SDK pipeline:
// default sampler and ids, BatchSpanProcessor, discarding exporter.
void BM_OtelCpp_Span_2Attrs(benchmark::State& state) {
  auto tracer = recording_provider().GetTracer("nemo.lens.helpers");
  std::int64_t i = 0;
  for (auto _ : state) {
    auto span = tracer->StartSpan("megatron.train_step");
    auto scope = tracer->WithActiveSpan(span);
    span->SetAttribute("iteration", ++i);
    span->SetAttribute("microbatch", 4);
    span->End();
    if ((i & (kDrainEvery - 1)) == 0) {  // as drain_off_the_clock, for the same conditions
      state.PauseTiming();
      recording_provider().ForceFlush();
      state.ResumeTiming();
    }
  }
}
BENCHMARK(BM_OtelCpp_Span_2Attrs)->Threads(1)->Threads(2);

// A native span the sampler drops (OTEL_TRACES_SAMPLER=always_off): ids and the decision, a
// context frame for children, nothing recorded.
void BM_Span_SamplerDropped(benchmark::State& state) {
  if (!lens_setup(state, {{"OTEL_TRACES_SAMPLER", "always_off"}})) return;
  std::int64_t i = 0;
  for (auto _ : state) {
    site(++i);
  }
  const lens::TelemetryStats stats = lens::bench::finish_telemetry(state);
  if (state.thread_index() == 0) {
    lens::bench::expect_equal(state, "spans exported by a dropping sampler", stats.spans_exported,
                              0);
  }
}
BENCHMARK(BM_Span_SamplerDropped)->Threads(1)->Threads(2);

// A rank's hand-off of its active span: inject into a carrier, extract on the other side.
void BM_Propagation_InjectExtract(benchmark::State& state) {
  auto tracer = recording_provider().GetTracer("nemo.lens.helpers");
  auto span = tracer->StartSpan("megatron.train_step");
  auto scope = tracer->WithActiveSpan(span);
  lens::Carrier carrier;
  for (auto _ : state) {
    carrier.clear();
    lens::inject_context(carrier);
    auto context = lens::extract_context(carrier);
    benchmark::DoNotOptimize(context);
  }
  span->End();
}
BENCHMARK(BM_Propagation_InjectExtract)->Threads(1)->Threads(2);

}  // namespace
