// setup_telemetry() and TelemetryHandle (see include/lens/telemetry.hpp): validation before
// any change, the double-init guard, installation of the exporting rank's tracer, meter and
// logger providers, the bounded shutdown of all three, and the fork handlers that leave a
// child with telemetry off.
#include <opentelemetry/baggage/propagation/baggage_propagator.h>
#include <opentelemetry/context/propagation/composite_propagator.h>
#include <opentelemetry/context/propagation/global_propagator.h>
#include <opentelemetry/logs/noop.h>
#include <opentelemetry/logs/provider.h>
#include <opentelemetry/metrics/noop.h>
#include <opentelemetry/metrics/provider.h>
#include <opentelemetry/trace/noop.h>
#include <opentelemetry/trace/propagation/b3_propagator.h>
#include <opentelemetry/trace/propagation/http_trace_context.h>
#include <opentelemetry/trace/propagation/jaeger.h>
#include <opentelemetry/trace/provider.h>
#include <pthread.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/signal_counts.hpp"
#include "export/export_report.hpp"
#include "export/exporters.hpp"
#include "lens/groups.hpp"
#include "lens/known_variables.hpp"
#include "lens/metrics.hpp"
#include "lens/telemetry.hpp"
#include "lens/version.hpp"
#include "logs/active_logger.hpp"
#include "native/log_pipeline.hpp"
#include "native/span_pipeline.hpp"
#include "native/thread_spans.hpp"
#include "native/tick_clock.hpp"
#include "sdk/diagnostics.hpp"
#include "telemetry/hang_sources.hpp"
#include "telemetry/logger_provider.hpp"
#include "telemetry/meter_provider.hpp"
#include "telemetry/plan.hpp"
#include "telemetry/prometheus_pull.hpp"
#include "telemetry/self_metrics.hpp"
#include "telemetry/step_progress.hpp"
#include "telemetry/tracer_provider.hpp"

namespace lens {

namespace trace_api = opentelemetry::trace;
namespace metrics_api = opentelemetry::metrics;
namespace logs_api = opentelemetry::logs;
namespace nostd = opentelemetry::nostd;
namespace propagation = opentelemetry::context::propagation;

struct TelemetryHandle::State {
  bool exporting = false;
  pid_t pid = ::getpid();
  int rank = 0;               // for the completeness line at shutdown
  bool print_totals = false;  // that line: not for exporter=none, which sends nowhere
  std::string run_id;
  Attributes resource;
  // Declared before the provider: the provider's handoff processor feeds it.
  std::shared_ptr<native::SpanPipeline> span_pipeline;
  std::shared_ptr<opentelemetry::sdk::trace::TracerProvider> tracer_provider;
  nostd::shared_ptr<trace_api::Tracer> tracer;
  std::shared_ptr<opentelemetry::sdk::metrics::MeterProvider> meter_provider;
  nostd::shared_ptr<metrics_api::Meter> meter;
  std::shared_ptr<telemetry::SelfMetrics> self_metrics;
  std::shared_ptr<opentelemetry::sdk::logs::LoggerProvider> logger_provider;
  nostd::shared_ptr<logs_api::Logger> logger;
  std::shared_ptr<native::LogPipeline> log_pipeline;
  // Outcomes of the exports of each signal: the one count of items exported and failed, and
  // failures, partial_success rejections and retries.
  std::shared_ptr<exporters::ExportReport> trace_report;
  std::shared_ptr<exporters::ExportReport> metric_report;
  std::shared_ptr<exporters::ExportReport> log_report;
  // The Prometheus scrape endpoint (OTEL_METRICS_EXPORTER=prometheus); stopped at shutdown.
  std::unique_ptr<exporters::PrometheusEndpoint> prometheus_endpoint;
  std::once_flag shutdown_once;
  std::atomic<bool> shut_down{false};
  // HANG_TIMEOUT's watchdog (telemetry/hang_watchdog.hpp); stopped first at shutdown. Last, so
  // that it goes before what it reads.
  std::shared_ptr<telemetry::HangWatchdog> hang_watchdog;

  // The self-metrics read this state: unregister them before any member goes.
  ~State() { self_metrics.reset(); }
};

namespace {

using State = TelemetryHandle::State;

// The time left before `deadline`, never negative.
std::chrono::microseconds remaining_until(std::chrono::steady_clock::time_point deadline) {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  return std::max(microseconds(0),
                  duration_cast<microseconds>(deadline - std::chrono::steady_clock::now()));
}

// Appends `item` to a comma-separated list ("traces, logs").
void append_to_list(std::string& list, std::string_view item) {
  list += list.empty() ? "" : ", ";
  list += item;
}

// Whether the handle's providers serve this process: not shut down, and not inherited through
// a fork (they belong to the parent).
bool serves_this_process(const State& state) noexcept {
  return !state.shut_down.load() && state.pid == ::getpid();
}

// What tracer(), meter() and logger() hand out: the live one while it serves this process,
// else the no-op one.
template <typename T>
nostd::shared_ptr<T> live_or_noop(const State& state, const nostd::shared_ptr<T>& live,
                                  nostd::shared_ptr<T> (*noop)()) {
  return live != nullptr && serves_this_process(state) ? live : noop();
}

// The exporter of one signal, counted by a new report in `report`: the overrides' exporter when
// there is one (it explains its own failures), else the one the configuration names.
template <Signal S>
Result<exporters::ExporterPtr<S>> make_counted_exporter(
    const exporters::ExporterOptions& options, exporters::ExporterPtr<S> from_overrides,
    std::shared_ptr<exporters::ExportReport>& report) {
  report = std::make_shared<exporters::ExportReport>(S);
  if (from_overrides != nullptr) {
    return exporters::make_reporting_exporter<S>(std::move(from_overrides), report,
                                                 "the overrides' exporter",
                                                 /*explain_failures=*/false);
  }
  return exporters::make_exporter<S>(options, report);
}

// Process-wide lifecycle state. Leaked on purpose: a forked child must never run the
// destructors of the parent's providers (their threads do not exist in the child).
struct Lifecycle {
  std::mutex mutex;
  std::shared_ptr<State> live;  // the handle whose providers are installed, if any
  std::vector<std::shared_ptr<State>>* abandoned = new std::vector<std::shared_ptr<State>>();
};

Lifecycle& lifecycle() {
  static auto* instance = new Lifecycle();
  return *instance;
}

nostd::shared_ptr<trace_api::Tracer> noop_tracer() {
  // Built through its concrete type: NoopTracer relies on enable_shared_from_this.
  static auto* tracer = new nostd::shared_ptr<trace_api::Tracer>(
      nostd::shared_ptr<trace_api::NoopTracer>(new trace_api::NoopTracer()));
  return *tracer;
}

nostd::shared_ptr<metrics_api::Meter> noop_meter() {
  static auto* meter = new nostd::shared_ptr<metrics_api::Meter>(new metrics_api::NoopMeter());
  return *meter;
}

nostd::shared_ptr<logs_api::Logger> noop_logger() {
  static auto* logger = new nostd::shared_ptr<logs_api::Logger>(new logs_api::NoopLogger());
  return *logger;
}

// Puts every process-wide switch back to "telemetry off" (no lock taken).
void reset_globals() noexcept {
  native::deactivate();
  logs::clear_active_logger();
  set_enabled_span_groups({});
  trace_api::Provider::SetTracerProvider(
      nostd::shared_ptr<trace_api::TracerProvider>(new trace_api::NoopTracerProvider()));
  metrics_api::Provider::SetMeterProvider(
      nostd::shared_ptr<metrics_api::MeterProvider>(new metrics_api::NoopMeterProvider()));
  logs_api::Provider::SetLoggerProvider(
      nostd::shared_ptr<logs_api::LoggerProvider>(new logs_api::NoopLoggerProvider()));
}

// fork(): the forking thread holds the lifecycle lock across the fork, so the child never
// inherits it held by a thread that does not exist there.
void before_fork() noexcept { lifecycle().mutex.lock(); }
void after_fork_in_parent() noexcept { lifecycle().mutex.unlock(); }
void after_fork_in_child() noexcept {
  Lifecycle& l = lifecycle();
  if (l.live != nullptr) {
    // The parent's providers stay untouched (leaked): destroying them would join threads
    // that only exist in the parent.
    l.abandoned->push_back(std::move(l.live));
    l.live = nullptr;
  }
  // The global provider slots hold references to the parent's providers too: leak them
  // (a meter provider's destructor would join the periodic reader's thread, which only
  // exists in the parent).
  static auto* leaked_tracers = new std::vector<nostd::shared_ptr<trace_api::TracerProvider>>();
  static auto* leaked_meters = new std::vector<nostd::shared_ptr<metrics_api::MeterProvider>>();
  static auto* leaked_loggers = new std::vector<nostd::shared_ptr<logs_api::LoggerProvider>>();
  leaked_tracers->push_back(trace_api::Provider::GetTracerProvider());
  leaked_meters->push_back(metrics_api::Provider::GetMeterProvider());
  leaked_loggers->push_back(logs_api::Provider::GetLoggerProvider());
  native::reset_after_fork();
  reset_globals();
  l.mutex.unlock();
}

void install_fork_handlers() {
  static std::once_flag once;
  std::call_once(once,
                 [] { pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); });
}

// OTEL_PROPAGATORS as a composite text-map propagator (default tracecontext,baggage).
nostd::shared_ptr<propagation::TextMapPropagator> make_propagator(
    const std::vector<std::string>& names) {
  std::vector<std::unique_ptr<propagation::TextMapPropagator>> parts;
  for (const std::string& name : names) {
    if (name == "tracecontext") {
      parts.push_back(std::make_unique<trace_api::propagation::HttpTraceContext>());
    } else if (name == "baggage") {
      parts.push_back(std::make_unique<opentelemetry::baggage::propagation::BaggagePropagator>());
    } else if (name == "b3") {
      parts.push_back(std::make_unique<trace_api::propagation::B3Propagator>());
    } else if (name == "b3multi") {
      parts.push_back(std::make_unique<trace_api::propagation::B3PropagatorMultiHeader>());
    } else if (name == "jaeger") {
      parts.push_back(std::make_unique<trace_api::propagation::JaegerPropagator>());
    }
  }
  return nostd::shared_ptr<propagation::TextMapPropagator>(
      new propagation::CompositePropagator(std::move(parts)));
}

// Flushes and shuts each provider down on a helper thread of its own, all against the one
// deadline, so that a backend that never answers cannot hold the caller past it (nor starve
// the other signals of their share). Returns the signals that did not finish in time; their
// helper threads are left to finish on their own (they own what they touch).
std::string shutdown_providers(const std::shared_ptr<State>& state,
                               std::chrono::milliseconds timeout) {
  struct Done {
    std::mutex mutex;
    std::condition_variable cv;
    int finished = 0;
  };
  auto done = std::make_shared<Done>();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // A job returns false when it knows it did not finish (the native pipeline's export thread
  // was still busy at the deadline); a job still running at the deadline did not finish either.
  struct Job {
    const char* signal;
    std::function<bool()> run;
  };
  std::vector<Job> jobs;
  if (state->tracer_provider != nullptr) {
    // The pipeline exports what is finished and, truncated, the native spans still open (the
    // caller's own keep their events: only its thread may read them). Spans made through the
    // opentelemetry API reach it when they end.
    const native::ThreadSpans* caller = native::calling_thread_spans();
    jobs.push_back({"traces", [state, deadline, caller] {
                      state->tracer_provider->Shutdown(remaining_until(deadline));
                      return state->span_pipeline == nullptr ||
                             state->span_pipeline->shutdown(remaining_until(deadline), caller);
                    }});
  }
  if (state->meter_provider != nullptr) {
    // The readers' shutdown exports one last time (metrics::PeriodicMetricReader,
    // ManualMetricReader has nothing to push). That last collection reads the lens.exporter.*
    // self-metrics, the rank's own account of its spans and log records (`lens report`'s
    // completeness section): it waits for their flushes, up to three quarters of the timeout,
    // so that it counts them exported rather than still queued.
    const int flushes =
        (state->tracer_provider != nullptr ? 1 : 0) + (state->logger_provider != nullptr ? 1 : 0);
    const auto flushes_deadline = deadline - timeout / 4;
    jobs.push_back({"metrics", [state, deadline, done, flushes, flushes_deadline] {
                      {
                        std::unique_lock<std::mutex> lock(done->mutex);
                        done->cv.wait_until(lock, flushes_deadline,
                                            [&] { return done->finished >= flushes; });
                      }
                      state->meter_provider->Shutdown(remaining_until(deadline));
                      // Frees the port: a later setup may serve on it again.
                      state->prometheus_endpoint.reset();
                      return true;
                    }});
  }
  if (state->logger_provider != nullptr) {
    // The provider's processor shuts the native log pipeline down (exports what is waiting).
    jobs.push_back({"logs", [state, deadline] {
                      state->logger_provider->Shutdown(remaining_until(deadline));
                      return state->log_pipeline->shutdown(remaining_until(deadline));
                    }});
  }
  struct Outcome {
    std::atomic<bool> finished{false};
    std::atomic<bool> ok{false};
  };
  std::vector<std::shared_ptr<Outcome>> outcomes;
  std::vector<std::thread> workers;
  for (Job& job : jobs) {
    auto outcome = std::make_shared<Outcome>();
    outcomes.push_back(outcome);
    workers.emplace_back([run = std::move(job.run), outcome, done] {
      const bool ok = run();
      std::lock_guard<std::mutex> lock(done->mutex);
      outcome->ok.store(ok);
      outcome->finished.store(true);
      ++done->finished;
      done->cv.notify_all();
    });
  }
  const int total = static_cast<int>(jobs.size());
  {
    std::unique_lock<std::mutex> lock(done->mutex);
    done->cv.wait_until(lock, deadline, [&] { return done->finished == total; });
  }
  std::string late;
  for (std::size_t i = 0; i < workers.size(); ++i) {
    const bool finished = outcomes[i]->finished.load();
    if (finished) {
      workers[i].join();
    } else {
      workers[i].detach();
    }
    if (!finished || !outcomes[i]->ok.load()) {
      append_to_list(late, jobs[i].signal);
    }
  }
  return late;
}

// One signal's whole account (core/signal_counts.hpp): its native pipeline's counters (if it
// has one) plus its exports'.
template <class Pipeline>
core::SignalCounts signal_counts(const std::shared_ptr<Pipeline>& pipeline,
                                 const std::shared_ptr<exporters::ExportReport>& report) noexcept {
  core::SignalCounts counts;
  if (pipeline != nullptr) counts += pipeline->counts();
  if (report != nullptr) counts += report->counts();
  return counts;
}

TelemetryStats stats_of(const State& state) noexcept {
  const core::SignalCounts spans = signal_counts(state.span_pipeline, state.trace_report);
  const core::SignalCounts points =
      signal_counts(std::shared_ptr<native::LogPipeline>(), state.metric_report);
  const core::SignalCounts logs = signal_counts(state.log_pipeline, state.log_report);
  const bool shut_down = state.shut_down.load();
  TelemetryStats stats;
  if (state.span_pipeline != nullptr) {
    // Native spans and the spans made through the opentelemetry API (an API span has ended once
    // the pipeline took it or its full queue refused it).
    stats.spans_started = spans.started + spans.foreign_started;
    stats.spans_ended = spans.handed_over() + spans.dropped_full_queue;
  }
  stats.attributes_dropped = spans.dropped_attributes;
  stats.events_dropped = spans.dropped_events;
  stats.links_dropped = spans.dropped_links;
  stats.values_truncated = spans.truncated_values;
  stats.spans_truncated = spans.truncated;
  if (state.trace_report) {
    stats.spans_exported = spans.items_exported;
    stats.spans_failed = spans.items_failed;
    stats.spans_dropped = spans.items_failed + spans.refused();
  }
  // Once shut down, every ended span was either exported or lost (failed or queue full); the
  // native spans lost before they could end into a buffer come on top.
  if (shut_down && stats.spans_ended > stats.spans_exported) {
    stats.spans_dropped = stats.spans_ended - stats.spans_exported + spans.dropped_full_buffer;
  }
  // The exports' own counters, over the three signals.
  core::SignalCounts all = spans;
  all += points;
  all += logs;
  stats.exports_failed = all.exports_failed;
  stats.export_retries = all.retries;
  stats.items_rejected = all.items_rejected;
  if (state.metric_report) {
    stats.metric_points_exported = points.items_exported;
    stats.metric_points_failed = points.items_failed;
    // Once shut down, an export still waiting for its answer (a receiver that accepted the
    // request and never answers) has lost its points: counted now, once.
    if (shut_down) stats.metric_points_failed += points.items_in_flight;
  }
  if (state.log_pipeline != nullptr && state.log_report) {
    const std::uint64_t emitted = logs.handed_over();
    stats.log_records_emitted = emitted;
    stats.values_truncated += logs.truncated_values;
    stats.log_records_exported = logs.items_exported;
    stats.log_records_failed = logs.items_failed + logs.lost;
    stats.log_records_dropped = logs.refused() + stats.log_records_failed;
    // Once shut down, every accepted record was either exported or lost.
    if (shut_down && emitted > stats.log_records_exported) {
      stats.log_records_dropped = logs.refused() + emitted - stats.log_records_exported;
    }
  }
  return stats;
}

// The rank's one completeness line at shutdown (issue 21 point 6): what each signal that this
// setup exports delivered, dropped (never delivered, whatever the reason) and failed (in exports
// that failed after their retries; part of dropped). Metric points are lost only by failed
// exports, so their dropped equals their failed. Signals that are off are left out.
std::string completeness_line(const State& state, const TelemetryStats& s) {
  std::string line = "lens: rank " + std::to_string(state.rank) + " telemetry: ";
  std::string parts;
  auto add = [&parts](const char* what, std::uint64_t exported, std::uint64_t dropped,
                      std::uint64_t failed) {
    parts += parts.empty() ? "" : "; ";
    parts += std::string(what) + " " + std::to_string(exported) + " exported, " +
             std::to_string(dropped) + " dropped, " + std::to_string(failed) + " failed";
  };
  if (state.trace_report) add("spans", s.spans_exported, s.spans_dropped, s.spans_failed);
  if (state.metric_report) {
    add("metric points", s.metric_points_exported, s.metric_points_failed, s.metric_points_failed);
  }
  if (state.log_report && state.log_pipeline) {
    add("log records", s.log_records_exported, s.log_records_dropped, s.log_records_failed);
  }
  return parts.empty() ? std::string() : line + parts;
}

// The exporters of an exporting rank, made before any provider so that a failure leaves
// nothing running. One report per signal counts every export, whichever exporter (an exporter
// from the overrides explains its own failures): the stats and the self-metrics read it.
struct Exporters {
  std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> spans;
  std::unique_ptr<opentelemetry::sdk::metrics::PushMetricExporter> metrics;
  std::shared_ptr<exporters::PrometheusSnapshot> prometheus;
  std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> logs;
};

Result<Exporters> make_exporters(State& state, const telemetry::TelemetryPlan& plan,
                                 SetupOverrides& overrides) {
  Exporters made;
  if (plan.traces) {
    auto spans = make_counted_exporter<Signal::traces>(
        plan.traces->exporter, std::move(overrides.span_exporter), state.trace_report);
    if (!spans.ok()) return Error(spans.message());
    made.spans = std::move(spans).value();
  }
  if (plan.metrics && overrides.metric_readers.empty() &&
      (overrides.metric_exporter != nullptr || plan.metrics->push)) {
    auto metrics = make_counted_exporter<Signal::metrics>(
        plan.metrics->push.value_or(exporters::ExporterOptions{}),
        std::move(overrides.metric_exporter), state.metric_report);
    if (!metrics.ok()) return Error(metrics.message());
    made.metrics = std::move(metrics).value();
  }
  if (plan.metrics && plan.metrics->prometheus) {
    auto pull = telemetry::start_prometheus_pull(*plan.metrics->prometheus, plan.rank);
    if (!pull.ok()) return Error(pull.message());
    made.prometheus = pull->snapshot;
    state.prometheus_endpoint = std::move(pull->endpoint);
  }
  if (plan.logs) {
    auto logs = make_counted_exporter<Signal::logs>(
        plan.logs->exporter, std::move(overrides.log_record_exporter), state.log_report);
    if (!logs.ok()) return Error(logs.message());
    made.logs = std::move(logs).value();
  }
  return made;
}

void build_traces(State& state, const telemetry::TracesPlan& plan,
                  std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> exporter,
                  std::shared_ptr<native::SharedTickCalibration> clock) {
  native::SpanPipelineOptions options = plan.pipeline;
  options.clock = std::move(clock);
  auto built =
      telemetry::build_tracer_provider(std::move(options), state.resource, std::move(exporter));
  state.tracer_provider = built.provider;
  state.span_pipeline = built.pipeline;
  state.tracer = state.tracer_provider->GetTracer("nemo.lens", kVersion);
}

void build_metrics(State& state, const telemetry::MetricsPlan& plan, Exporters& made,
                   SetupOverrides& overrides) {
  auto built = telemetry::build_meter_provider(
      plan.export_interval, state.resource, std::move(made.metrics),
      std::move(overrides.metric_readers), std::move(overrides.metric_views),
      std::move(made.prometheus));
  state.meter_provider = built.provider;
  state.meter = state.meter_provider->GetMeter("nemo.lens", kVersion);
}

void build_logs(State& state, const telemetry::LogsPlan& plan,
                std::unique_ptr<opentelemetry::sdk::logs::LogRecordExporter> exporter,
                std::shared_ptr<native::SharedTickCalibration> clock) {
  native::LogPipelineOptions options = plan.pipeline;
  options.clock = std::move(clock);
  auto built = telemetry::build_logger_provider(options, state.resource, std::move(exporter));
  state.logger_provider = built.provider;
  state.log_pipeline = built.pipeline;
  state.logger = state.logger_provider->GetLogger("nemo.lens", "nemo.lens", kVersion);
}

// Builds an exporting rank's exporters, pipelines and providers into `state` (nothing is
// installed). Returns the tick clock of the native pipelines (null when neither is on).
Result<std::shared_ptr<native::SharedTickCalibration>> build_pipelines(
    State& state, const telemetry::TelemetryPlan& plan, SetupOverrides& overrides) {
  sdk::install_sdk_diagnostics();  // before any SDK component can report
  state.resource = plan.resource;
  auto made = make_exporters(state, plan, overrides);
  if (!made.ok()) return Error(made.message());
  // One tick conversion for native spans and logs: a line logged inside a span is stamped
  // within it. (Measuring its first rate busy-waits 2 ms: only when a native path needs it.)
  std::shared_ptr<native::SharedTickCalibration> clock;
  if (plan.traces || plan.logs) {
    clock = std::make_shared<native::SharedTickCalibration>();
  }
  if (plan.traces) build_traces(state, *plan.traces, std::move(made->spans), clock);
  if (plan.metrics) build_metrics(state, *plan.metrics, *made, overrides);
  if (plan.logs) build_logs(state, *plan.logs, std::move(made->logs), clock);
  if (state.meter != nullptr) {
    // A plain pointer: the registration lives in the state and ends before it (~State).
    const State* raw = &state;
    state.self_metrics = telemetry::register_self_metrics(
        *state.meter, [raw] { return stats_of(*raw); }, state.tracer_provider != nullptr,
        state.logger_provider != nullptr);
  }
  return clock;
}

// The hang watchdog: only with spans to show or logs to send, and its thread only once the
// process trains (its first noted step).
void start_hang_watchdog(const std::shared_ptr<State>& state, const telemetry::TelemetryPlan& plan,
                         std::shared_ptr<native::SharedTickCalibration> hang_clock) {
  if ((state->span_pipeline == nullptr && state->log_pipeline == nullptr) ||
      plan.hang_timeout.mode == HangTimeout::Mode::off) {
    return;
  }
  state->hang_watchdog = std::make_shared<telemetry::HangWatchdog>(
      plan.hang_timeout,
      telemetry::hang_sources(
          plan.rank.rank,
          state->span_pipeline != nullptr ? state->span_pipeline->registry() : nullptr,
          std::move(hang_clock),
          state->log_pipeline != nullptr ? state->log_pipeline->registry() : nullptr),
      plan.hang_startup_timeout);
  // A training process (lens::expect_training_steps before setup) with a start-up timeout is
  // watched from now on, before its first step too.
  if (plan.hang_startup_timeout.mode != HangTimeout::Mode::off &&
      telemetry::training_steps_expected()) {
    try {
      state->hang_watchdog->start();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lens: warning: no hang watchdog on rank %d: %s\n", plan.rank.rank,
                   e.what());
    }
  }
  // A weak reference: the hook never keeps a state's watchdog alive nor outlives it. Not in
  // a forked child: the watchdog watches the parent's pipelines.
  telemetry::on_first_step([weak = std::weak_ptr<telemetry::HangWatchdog>(state->hang_watchdog),
                            pid = state->pid, rank_number = plan.rank.rank] {
    if (::getpid() != pid) return;
    try {
      if (const auto watchdog = weak.lock()) watchdog->start();
    } catch (const std::exception& e) {
      // Out of threads: the rank trains on without the watchdog.
      std::fprintf(stderr, "lens: warning: no hang watchdog on rank %d: %s\n", rank_number,
                   e.what());
    }
  });
}

// Makes `state` the process's telemetry (the lifecycle lock held, the previous one retired):
// the global providers, propagator and span groups, the native pipelines, the hang watchdog.
void install(const std::shared_ptr<State>& state, const telemetry::TelemetryPlan& plan,
             std::shared_ptr<native::SharedTickCalibration> clock) {
  if (!plan.run_id.warning.empty() && plan.exporting) {
    std::fprintf(stderr, "lens: warning: %s\n", plan.run_id.warning.c_str());
  }
  if (state->prometheus_endpoint != nullptr) {
    // Once per rank: each rank of a node has its own port (port + local rank).
    std::fprintf(stderr, "lens: rank %d serves Prometheus metrics at %s\n", plan.rank.rank,
                 state->prometheus_endpoint->url().c_str());
  }
  metrics::clear_instrument_cache();
  reset_globals();  // a signal that is off stays a no-op
  if (!plan.exporting) return;
  if (state->tracer_provider != nullptr) {
    trace_api::Provider::SetTracerProvider(
        nostd::shared_ptr<trace_api::TracerProvider>(state->tracer_provider));
    if (state->span_pipeline != nullptr) state->span_pipeline->activate();
  }
  if (state->meter_provider != nullptr) {
    metrics_api::Provider::SetMeterProvider(
        nostd::shared_ptr<metrics_api::MeterProvider>(state->meter_provider));
  }
  if (state->logger_provider != nullptr) {
    logs_api::Provider::SetLoggerProvider(
        nostd::shared_ptr<logs_api::LoggerProvider>(state->logger_provider));
    logs::set_active_logger(logs::ActiveLogger{state->log_pipeline->registry()});
  }
  propagation::GlobalTextMapPropagator::SetGlobalPropagator(make_propagator(plan.propagators));
  set_enabled_span_groups(plan.span_groups);
  start_hang_watchdog(state, plan, std::move(clock));
}

}  // namespace

TelemetryHandle::TelemetryHandle() : state_(std::make_shared<State>()) {}
TelemetryHandle::TelemetryHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
TelemetryHandle::~TelemetryHandle() = default;

nostd::shared_ptr<trace_api::Tracer> TelemetryHandle::tracer() const {
  return live_or_noop(*state_, state_->tracer, noop_tracer);
}

nostd::shared_ptr<metrics_api::Meter> TelemetryHandle::meter() const {
  return live_or_noop(*state_, state_->meter, noop_meter);
}

nostd::shared_ptr<logs_api::Logger> TelemetryHandle::logger() const {
  return live_or_noop(*state_, state_->logger, noop_logger);
}

bool TelemetryHandle::is_exporting() const noexcept { return state_->exporting; }
const std::string& TelemetryHandle::run_id() const noexcept { return state_->run_id; }
const Attributes& TelemetryHandle::resource() const noexcept { return state_->resource; }

TelemetryStats TelemetryHandle::stats() const noexcept { return stats_of(*state_); }

Status TelemetryHandle::force_flush(std::chrono::milliseconds timeout) noexcept {
  const std::shared_ptr<State> state = state_;
  if (!state->exporting || !serves_this_process(*state)) {
    return {};
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string late;
  auto note = [&late](bool ok, const char* signal) {
    if (!ok) append_to_list(late, signal);
  };
  // The provider's processor forwards to the span pipeline's flush.
  if (state->tracer_provider != nullptr) {
    note(state->tracer_provider->ForceFlush(remaining_until(deadline)), "traces");
  }
  if (state->meter_provider != nullptr) {
    note(state->meter_provider->ForceFlush(remaining_until(deadline)), "metrics");
  }
  if (state->logger_provider != nullptr) {
    note(state->logger_provider->ForceFlush(remaining_until(deadline)), "logs");
  }
  if (!late.empty()) {
    return Error("Telemetry flush did not finish within " + std::to_string(timeout.count()) +
                 " ms for " + late);
  }
  return {};
}

Status TelemetryHandle::shutdown(std::chrono::milliseconds timeout) noexcept {
  const std::shared_ptr<State> state = state_;
  if (!state->exporting || state->pid != ::getpid()) {
    // Nothing was built here, or these providers belong to the parent of a fork.
    state->shut_down.store(true);
    std::lock_guard<std::mutex> lock(lifecycle().mutex);
    if (lifecycle().live == state) {
      lifecycle().live = nullptr;
    }
    return {};
  }
  Status result;
  std::call_once(state->shutdown_once, [&] {
    if (state->hang_watchdog != nullptr) {
      telemetry::on_first_step(nullptr);
      state->hang_watchdog->stop();
    }
    {
      std::lock_guard<std::mutex> lock(lifecycle().mutex);
      if (lifecycle().live == state) {
        lifecycle().live = nullptr;
        reset_globals();
      }
    }
    state->shut_down.store(true);
    // Exports keep retrying, but only within the shutdown timeout: the final flush fits in it
    // and a last batch survives one retryable answer.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::vector<std::shared_ptr<exporters::ExportReport>> reports = {
        state->trace_report, state->metric_report, state->log_report};
    std::vector<std::uint64_t> failed_before;
    for (const auto& report : reports) {
      failed_before.push_back(report ? report->counts().items_failed : 0);
      if (report) report->begin_drain(deadline);
    }
    const std::string late = shutdown_providers(state, timeout);
    // Only now: cached gauges report through callbacks that the final collection still calls.
    metrics::clear_instrument_cache();
    // What the final exports could not deliver (their causes are already on stderr).
    std::string undelivered;
    for (std::size_t i = 0; i < reports.size(); ++i) {
      if (!reports[i]) continue;
      const std::uint64_t lost = reports[i]->counts().items_failed - failed_before[i];
      if (lost == 0) continue;
      append_to_list(undelivered,
                     std::to_string(lost) + " " + exporters::items_of(reports[i]->signal()));
    }
    if (!late.empty()) {
      result =
          Error("Telemetry shutdown did not finish within " + std::to_string(timeout.count()) +
                " ms for " + late + "; the exporter is still busy and what it holds may be lost");
    } else if (!undelivered.empty()) {
      result = Error("Telemetry shutdown could not deliver " + undelivered +
                     " (the export failures are on stderr)");
    }
    // One line per rank with the totals, so that a log says how complete the telemetry is.
    try {
      const std::string totals =
          state->print_totals ? completeness_line(*state, stats_of(*state)) : std::string();
      if (!totals.empty()) std::fprintf(stderr, "%s\n", totals.c_str());
    } catch (...) {
      // Out of memory: the counters stay readable through stats().
    }
  });
  return result;
}

Result<TelemetryHandle> setup_telemetry(Config config, const RankInfo& rank,
                                        const Attributes& resource_attributes,
                                        SetupOverrides overrides) try {
  install_fork_handlers();
  const Env env = overrides.env ? *overrides.env : Env::process();
  // Misspelt variables are named even when they leave telemetry off (a missing D in ENABLED
  // does exactly that); once per node: only the first local rank prints.
  if (rank.local_rank == 0) {
    for (const std::string& warning :
         unknown_variable_warnings(env, config.prefix, config.fallback_prefix)) {
      std::fprintf(stderr, "lens: warning: %s\n", warning.c_str());
    }
  }
  std::unique_lock<std::mutex> lock(lifecycle().mutex);
  Lifecycle& l = lifecycle();

  // Disabled (or OTEL_SDK_DISABLED): nothing is validated, built or guarded (docs/telemetry.md, "What setup does").
  if (!config.enabled || config.otel.sdk_disabled.value) {
    if (l.live == nullptr) {
      reset_globals();
    }
    return TelemetryHandle();
  }

  if (l.live != nullptr && !overrides.allow_reinit) {
    return Error(
        "setup_telemetry() has already been initialised in this process and that telemetry "
        "is still live; call it once at start-up, or shut the previous handle down first");
  }
  auto plan = telemetry::make_plan(config, rank, resource_attributes, overrides, env);
  if (!plan.ok()) {
    return Error(plan.message());
  }
  auto state = std::make_shared<State>();
  state->run_id = plan->run_id.value;
  state->rank = rank.rank;
  state->print_totals = plan->print_totals;
  state->exporting = plan->exporting;
  // The tick clock of the native pipelines, for the hang watchdog's span ages.
  std::shared_ptr<native::SharedTickCalibration> clock;
  if (plan->exporting) {
    auto built = build_pipelines(*state, *plan, overrides);
    if (!built.ok()) {
      return Error(built.message());
    }
    clock = std::move(built).value();
  }

  // Everything that can fail has succeeded: from here on, install.
  if (l.live != nullptr) {
    // allow_reinit: retire the previous providers before installing new ones.
    std::shared_ptr<State> previous = std::move(l.live);
    l.live = nullptr;
    lock.unlock();
    static_cast<void>(TelemetryHandle(previous).shutdown());
    lock.lock();
  }
  install(state, *plan, clock);
  l.live = state;
  return TelemetryHandle(state);
} catch (const std::exception& e) {
  // Out of memory or threads (a process or container limit) while building: what was built is
  // torn down with the state, and the caller gets an error, never the exception.
  return Error(std::string("setup_telemetry() could not build the telemetry pipelines (out of "
                           "memory or threads?): ") +
               e.what() + "; telemetry is off");
}

}  // namespace lens
