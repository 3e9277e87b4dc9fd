// set_telemetry, end_job_telemetry and the exit hooks (lens/megatron/telemetry.hpp).
//
// SIGTERM: shutting down takes locks and allocates, which a signal handler must not do. The
// handler only posts a semaphore (async-signal-safe); a watcher thread started with the hooks
// wakes, ends the job spans, shuts down, restores the previous disposition and sends SIGTERM again
// so that it acts as it would have without us (default: terminate; ignored: nothing; a handler:
// runs it). A forked child (a data-loader worker) has no watcher: the handler sees another pid and
// hands the signal straight to the previous disposition.
#include "lens/megatron/telemetry.hpp"

#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>

#include "lens/megatron/config.hpp"

namespace lens::megatron {
namespace {

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

std::once_flag hooks_installed;
pid_t hooks_pid = 0;
struct sigaction previous_sigterm {};
sem_t sigterm_posted;

void restore_and_resend() {
  sigaction(SIGTERM, &previous_sigterm, nullptr);
  kill(getpid(), SIGTERM);
}

void on_sigterm(int) {
  const int saved_errno = errno;
  if (getpid() == hooks_pid) {
    sem_post(&sigterm_posted);
  } else {
    restore_and_resend();  // a forked child: telemetry is off there
  }
  errno = saved_errno;
}

void watch_sigterm() {
  while (sem_wait(&sigterm_posted) != 0 && errno == EINTR) {
  }
  (void)end_job_telemetry();
  restore_and_resend();
}

void end_at_exit() {
  if (getpid() == hooks_pid) (void)end_job_telemetry();
}

void install_hooks() {
  std::call_once(hooks_installed, [] {
    hooks_pid = getpid();
    if (sem_init(&sigterm_posted, 0, 0) != 0) return;
    std::atexit(end_at_exit);
    try {
      std::thread(watch_sigterm).detach();
    } catch (...) {
      return;  // no thread: keep the previous SIGTERM disposition rather than swallow signals
    }
    struct sigaction action {};
    action.sa_handler = on_sigterm;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, &previous_sigterm);
  });
}

}  // namespace

Status set_telemetry(const TrainingArgs& args, const RankInfo& rank, SetTelemetryOptions options) {
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

Status end_job_telemetry(std::chrono::milliseconds timeout) noexcept {
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
  // The interval span is a child of the startup span's trace: end the inner one first.
  interval.end();
  startup.end();
  return handle->shutdown(timeout);
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
