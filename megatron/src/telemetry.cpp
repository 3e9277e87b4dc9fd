// set_telemetry, end_job_telemetry and the exit hooks (lens/megatron/telemetry.hpp).
//
// SIGTERM and SIGINT: shutting down takes locks and allocates, which a signal handler must not
// do. The handler only sets a flag and posts a semaphore (async-signal-safe); a watcher thread
// started with the hooks wakes, ends the job spans marked interrupted (error status "interrupted
// by SIGINT", nemo.span.truncated), shuts down (the other open spans go out truncated), restores
// the previous disposition and sends the signal again so that it acts as it would have without
// us (default: terminate; ignored: nothing; a handler: runs it). SIGINT that was ignored when the
// hooks were installed (a background job of a shell) stays ignored: we take it only when it
// would have done something. A forked child (a data-loader worker) has no watcher: the handler
// sees another pid and hands the signal straight to the previous disposition.
#include "lens/megatron/telemetry.hpp"

#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>

#include "lens/megatron/config.hpp"
#include "lens/step_progress.hpp"

namespace lens::megatron {
namespace {

// As the spans still open at shutdown are marked (src/native/span_pipeline.cpp).
constexpr std::string_view kTruncatedAttribute = "nemo.span.truncated";
constexpr std::string_view kTruncatedReasonAttribute = "nemo.span.truncated.reason";

struct State {
  std::mutex mutex;
  std::shared_ptr<TelemetryHandle> handle;
  Span startup;
  Span interval;
  bool ended = false;
};

// Never destroyed: the atexit hook and the watcher thread may use it after static destructors.
State& state() {
  static State* instance = new State;
  return *instance;
}

// ---- exit hooks ------------------------------------------------------------------------------

// The signals that end the job's telemetry; index into `previous` and `received`.
constexpr int kSignals[] = {SIGTERM, SIGINT};
constexpr std::size_t kSignalCount = sizeof(kSignals) / sizeof(kSignals[0]);

std::once_flag hooks_installed;
pid_t hooks_pid = 0;
struct sigaction previous[kSignalCount] = {};
bool handled[kSignalCount] = {};  // written before the handlers are installed, then only read
// Set by the handler, taken by the watcher: lock-free atomics are async-signal-safe.
std::atomic<bool> received[kSignalCount] = {};
static_assert(std::atomic<bool>::is_always_lock_free);
sem_t signal_posted;

std::size_t index_of(int signal) {
  for (std::size_t i = 0; i < kSignalCount; ++i) {
    if (kSignals[i] == signal) return i;
  }
  return 0;
}

const char* name_of(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }

void restore_and_resend(int signal) {
  sigaction(signal, &previous[index_of(signal)], nullptr);
  kill(getpid(), signal);
}

void on_signal(int signal) {
  const int saved_errno = errno;
  if (getpid() == hooks_pid) {
    received[index_of(signal)].store(true);
    sem_post(&signal_posted);
  } else {
    restore_and_resend(signal);  // a forked child: telemetry is off there
  }
  errno = saved_errno;
}

// The first signal ends the telemetry; each one is then handed to its previous disposition (a
// later signal whose previous disposition was to ignore it keeps being taken here and ignored).
void watch_signals() {
  for (;;) {
    while (sem_wait(&signal_posted) != 0 && errno == EINTR) {
    }
    for (std::size_t i = 0; i < kSignalCount; ++i) {
      if (!received[i].exchange(false)) continue;
      (void)end_job_telemetry_interrupted(kSignals[i]);
      restore_and_resend(kSignals[i]);
    }
  }
}

void end_at_exit() {
  if (getpid() == hooks_pid) (void)end_job_telemetry();
}

void install_hooks() {
  std::call_once(hooks_installed, [] {
    hooks_pid = getpid();
    if (sem_init(&signal_posted, 0, 0) != 0) return;
    std::atexit(end_at_exit);
    try {
      std::thread(watch_signals).detach();
    } catch (...) {
      return;  // no thread: keep the previous dispositions rather than swallow signals
    }
    for (std::size_t i = 0; i < kSignalCount; ++i) {
      sigaction(kSignals[i], nullptr, &previous[i]);
      // An ignored SIGINT is a shell's background job: it must stay ignored.
      handled[i] = !(kSignals[i] == SIGINT && previous[i].sa_handler == SIG_IGN &&
                     (previous[i].sa_flags & SA_SIGINFO) == 0);
    }
    for (std::size_t i = 0; i < kSignalCount; ++i) {
      if (!handled[i]) continue;
      struct sigaction action {};
      action.sa_handler = on_signal;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESTART;
      sigaction(kSignals[i], &action, &previous[i]);
    }
  });
}

}  // namespace

Status set_telemetry(const TrainingArgs& args, const RankInfo& rank, SetTelemetryOptions options) {
  expect_training_steps();  // a trainer: watched for a start-up hang (HANG_STARTUP_TIMEOUT)
  const Env env = options.env ? *options.env : Env::process();
  Result<Config> config = config_from_env(env);
  if (!config.ok()) return Error(config.message());
  config->apply(args.otel);
  // A disabled run builds no attributes (and probes nothing for them).
  const Attributes attributes =
      config->enabled ? training_resource_attributes(args, rank) : Attributes{};
  SetupOverrides overrides = std::move(options.overrides);
  overrides.collective = options.collective;
  if (!overrides.env) overrides.env = env;
  Result<TelemetryHandle> handle =
      setup_telemetry(std::move(*config), rank, attributes, std::move(overrides));
  if (!handle.ok()) return Error(handle.message());
  const bool exporting = handle->is_exporting();
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.handle = std::make_shared<TelemetryHandle>(std::move(*handle));
    s.startup = Span();
    s.interval = Span();
    s.ended = false;
  }
  if (exporting && options.install_exit_hooks) install_hooks();
  return {};
}

std::shared_ptr<TelemetryHandle> get_telemetry() noexcept {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.handle;
}

void set_job_span(JobSpan which, Span span) noexcept {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  (which == JobSpan::startup ? s.startup : s.interval) = std::move(span);
}

namespace {

// Ends the job spans (marked interrupted when `signal` is not 0) and shuts telemetry down.
Status end_job(int signal, std::chrono::milliseconds timeout) noexcept {
  std::shared_ptr<TelemetryHandle> handle;
  Span startup;
  Span interval;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.ended || !s.handle) return {};
    s.ended = true;
    handle = s.handle;
    startup = std::move(s.startup);
    interval = std::move(s.interval);
  }
  if (signal != 0) {
    // The run did not finish: the job spans say so, as the spans still open at shutdown do
    // (nemo.span.truncated), with the signal in their error status.
    char reason[64];
    std::snprintf(reason, sizeof(reason), "interrupted by %s", name_of(signal));
    for (Span* span : {&interval, &startup}) {
      span->set_error(reason);
      span->set_attribute(kTruncatedAttribute, true);
      span->add_event(kTruncatedAttribute, {{kTruncatedReasonAttribute, std::string_view(reason)}});
    }
  }
  // The interval span is a child of the startup span's trace: end the inner one first.
  interval.end();
  startup.end();
  return handle->shutdown(timeout);
}

}  // namespace

Status end_job_telemetry(std::chrono::milliseconds timeout) noexcept { return end_job(0, timeout); }

Status end_job_telemetry_interrupted(int signal, std::chrono::milliseconds timeout) noexcept {
  return end_job(signal, timeout);
}

void reset_telemetry() noexcept {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.handle = nullptr;
  s.startup = Span();
  s.interval = Span();
  s.ended = false;
}

}  // namespace lens::megatron
