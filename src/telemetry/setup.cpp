// setup_telemetry() and TelemetryHandle (see include/lens/telemetry.hpp): validation before
// any change, the double-init guard, installation of the exporting rank's providers, the
// bounded shutdown, and the fork handlers that leave a child with telemetry off.
#include <opentelemetry/baggage/propagation/baggage_propagator.h>
#include <opentelemetry/context/propagation/composite_propagator.h>
#include <opentelemetry/context/propagation/global_propagator.h>
#include <opentelemetry/logs/noop.h>
#include <opentelemetry/metrics/noop.h>
#include <opentelemetry/trace/noop.h>
#include <opentelemetry/trace/propagation/b3_propagator.h>
#include <opentelemetry/trace/propagation/http_trace_context.h>
#include <opentelemetry/trace/propagation/jaeger.h>
#include <opentelemetry/trace/provider.h>
#include <pthread.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "export/span_exporters.hpp"
#include "lens/detail/active_tracer.hpp"
#include "lens/groups.hpp"
#include "lens/telemetry.hpp"
#include "lens/validate.hpp"
#include "lens/version.hpp"
#include "sdk/diagnostics.hpp"
#include "telemetry/tracer_provider.hpp"

namespace lens {

namespace trace_api = opentelemetry::trace;
namespace nostd = opentelemetry::nostd;
namespace propagation = opentelemetry::context::propagation;

struct TelemetryHandle::State {
  bool exporting = false;
  pid_t pid = ::getpid();
  std::string run_id;
  Attributes resource;
  std::shared_ptr<opentelemetry::sdk::trace::TracerProvider> tracer_provider;
  nostd::shared_ptr<trace_api::Tracer> tracer;
  std::shared_ptr<sdk::SpanCounts> counts;
  std::function<std::uint64_t()> exported;
  std::function<std::uint64_t()> failed;
  std::once_flag shutdown_once;
  std::atomic<bool> shut_down{false};
};

namespace {

using State = TelemetryHandle::State;

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

// Puts every process-wide switch back to "telemetry off" (no lock taken).
void reset_globals() noexcept {
  detail::set_active_tracer(detail::TracerPtr());
  set_enabled_span_groups({});
  trace_api::Provider::SetTracerProvider(
      nostd::shared_ptr<trace_api::TracerProvider>(new trace_api::NoopTracerProvider()));
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
  // The global provider slot holds a reference to the parent's provider too: leak it.
  static auto* leaked = new std::vector<nostd::shared_ptr<trace_api::TracerProvider>>();
  leaked->push_back(trace_api::Provider::GetTracerProvider());
  reset_globals();
  l.mutex.unlock();
}

void install_fork_handlers() {
  static std::once_flag once;
  std::call_once(once,
                 [] { pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); });
}

// OTEL_PROPAGATORS as a composite text-map propagator (default tracecontext,baggage).
nostd::shared_ptr<propagation::TextMapPropagator> make_propagator(const OtelSettings& otel) {
  std::vector<std::unique_ptr<propagation::TextMapPropagator>> parts;
  for (const std::string& name : otel.propagators.value) {
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

// Flushes and shuts the providers down on a helper thread, so that a backend that never
// answers cannot hold the caller past the deadline. Returns false on timeout (the helper
// thread is left to finish on its own; it owns what it touches).
bool shutdown_providers(const std::shared_ptr<State>& state, std::chrono::milliseconds timeout) {
  if (state->tracer_provider == nullptr) {
    return true;
  }
  struct Done {
    std::mutex mutex;
    std::condition_variable cv;
    bool finished = false;
  };
  auto done = std::make_shared<Done>();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::thread worker([state, done, deadline] {
    using std::chrono::duration_cast;
    using std::chrono::microseconds;
    auto remaining = [&] {
      return std::max(microseconds(0),
                      duration_cast<microseconds>(deadline - std::chrono::steady_clock::now()));
    };
    // Shutdown first ends still-open spans (the closer precedes the batch processor), then
    // the batch processor drains its queue into the exporter.
    state->tracer_provider->Shutdown(remaining());
    std::lock_guard<std::mutex> lock(done->mutex);
    done->finished = true;
    done->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(done->mutex);
  const bool finished = done->cv.wait_until(lock, deadline, [&] { return done->finished; });
  lock.unlock();
  if (finished) {
    worker.join();
  } else {
    worker.detach();
  }
  return finished;
}

}  // namespace

TelemetryHandle::TelemetryHandle() : state_(std::make_shared<State>()) {}
TelemetryHandle::TelemetryHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
TelemetryHandle::~TelemetryHandle() = default;

nostd::shared_ptr<trace_api::Tracer> TelemetryHandle::tracer() const {
  if (!state_->exporting || state_->shut_down.load() || state_->pid != ::getpid()) {
    return noop_tracer();
  }
  return state_->tracer;
}

nostd::shared_ptr<opentelemetry::metrics::Meter> TelemetryHandle::meter() const {
  static auto* meter =
      new nostd::shared_ptr<opentelemetry::metrics::Meter>(new opentelemetry::metrics::NoopMeter());
  return *meter;
}

nostd::shared_ptr<opentelemetry::logs::Logger> TelemetryHandle::logger() const {
  static auto* logger =
      new nostd::shared_ptr<opentelemetry::logs::Logger>(new opentelemetry::logs::NoopLogger());
  return *logger;
}

bool TelemetryHandle::is_exporting() const noexcept { return state_->exporting; }
const std::string& TelemetryHandle::run_id() const noexcept { return state_->run_id; }
const Attributes& TelemetryHandle::resource() const noexcept { return state_->resource; }

TelemetryStats TelemetryHandle::stats() const noexcept {
  TelemetryStats stats;
  if (state_->counts != nullptr) {
    stats.spans_started = state_->counts->started.load(std::memory_order_relaxed);
    stats.spans_ended = state_->counts->ended.load(std::memory_order_relaxed);
  }
  if (state_->exported) {
    stats.spans_exported = state_->exported();
  }
  if (state_->failed) {
    stats.spans_dropped = state_->failed();
  }
  // Once shut down, every ended span was either exported or lost (failed or queue full).
  if (state_->shut_down.load() && stats.spans_ended > stats.spans_exported) {
    stats.spans_dropped = stats.spans_ended - stats.spans_exported;
  }
  return stats;
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
    {
      std::lock_guard<std::mutex> lock(lifecycle().mutex);
      if (lifecycle().live == state) {
        lifecycle().live = nullptr;
        reset_globals();
      }
    }
    state->shut_down.store(true);
    if (!shutdown_providers(state, timeout)) {
      result = Error("Telemetry shutdown did not finish within " + std::to_string(timeout.count()) +
                     " ms; the exporter is still busy and what it holds may be lost");
    }
  });
  return result;
}

Result<TelemetryHandle> setup_telemetry(Config config, const RankInfo& rank,
                                        const Attributes& resource_attributes,
                                        SetupOverrides overrides) {
  install_fork_handlers();
  const Env env = overrides.env ? *overrides.env : Env::process();
  std::unique_lock<std::mutex> lock(lifecycle().mutex);
  Lifecycle& l = lifecycle();

  // Disabled (or OTEL_SDK_DISABLED): nothing is validated, built or guarded (SPEC §1.3).
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
  if (Status status = validate(config, &rank); !status.ok()) {
    return Error(status.message());
  }
  auto run_id = resolve_run_id(config, rank, env, overrides.collective);
  if (!run_id.ok()) {
    return Error(run_id.message());
  }
  auto exporting =
      should_export(config, rank, overrides.rank_strategy ? &*overrides.rank_strategy : nullptr);
  if (!exporting.ok()) {
    return Error(exporting.message());
  }
  auto groups = resolve_span_groups(config.span_groups);
  if (!groups.ok()) {
    return Error(groups.message());
  }
  config.run_id = run_id->value;

  auto state = std::make_shared<State>();
  state->run_id = config.run_id;
  state->exporting = *exporting;

  if (*exporting) {
    sdk::install_sdk_diagnostics();  // before any SDK component can report
    state->resource = build_resource(config, rank, resource_attributes, env);
    std::unique_ptr<opentelemetry::sdk::trace::SpanExporter> exporter;
    if (overrides.span_exporter != nullptr) {
      exporter = std::move(overrides.span_exporter);
    } else {
      auto made = exporters::make_span_exporter(config);
      if (!made.ok()) {
        return Error(made.message());
      }
      exporter = std::move(made).value();
    }
    auto built =
        telemetry::build_tracer_provider(config, rank, state->resource, std::move(exporter));
    if (!built.ok()) {
      return Error(built.message());
    }
    state->tracer_provider = built->provider;
    state->counts = built->counts;
    state->exported = built->exported;
    state->failed = built->failed;
    state->tracer = state->tracer_provider->GetTracer("nemo.lens", kVersion);
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
  if (!run_id->warning.empty() && *exporting) {
    std::fprintf(stderr, "lens: warning: %s\n", run_id->warning.c_str());
  }
  if (*exporting) {
    trace_api::Provider::SetTracerProvider(
        nostd::shared_ptr<trace_api::TracerProvider>(state->tracer_provider));
    propagation::GlobalTextMapPropagator::SetGlobalPropagator(make_propagator(config.otel));
    detail::set_active_tracer(state->tracer);
    set_enabled_span_groups(*groups);
  } else {
    reset_globals();
  }
  l.live = state;
  return TelemetryHandle(state);
}

}  // namespace lens
