// The trainer's telemetry lifecycle, the counterpart of Megatron's _set_telemetry() and its "end
// job spans" routine (docs/megatron.md, "Lifecycle"): configuration from MEGATRON_OTEL_* with
// NEMO_LENS_* as fallback and the --otel-* flags on top, the training resource attributes, and a
// shutdown that runs exactly once — on normal completion, on an early exit, from atexit, or on
// SIGTERM or SIGINT.
// Thread-safety: set_telemetry/reset_telemetry from one thread (the trainer's main thread);
// get_telemetry, set_job_span and end_job_telemetry from any thread.
#pragma once

#include <chrono>
#include <memory>

#include "lens/env.hpp"
#include "lens/megatron/training_args.hpp"
#include "lens/rank_info.hpp"
#include "lens/resource.hpp"
#include "lens/result.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"

namespace lens::megatron {

struct SetTelemetryOptions {
  // The job's collective: rank 0 shares a generated run id with every rank (docs/resources.md,
  // "Run identification").
  Collective* collective = nullptr;
  // The environment to read (default: the process environment).
  std::optional<Env> env;
  // Install the atexit, SIGTERM and SIGINT hooks when this rank exports (default). Tests turn it
  // off.
  bool install_exit_hooks = true;
  // Passed to setup_telemetry (tests: span exporter, allow_reinit).
  SetupOverrides overrides;
};

// Sets telemetry up on this rank: reads the Megatron configuration, applies args.otel, builds the
// training resource attributes (only when enabled: no probing of a disabled run) and calls
// setup_telemetry. On an exporting rank it installs, once per process, an atexit hook and
// SIGTERM and SIGINT handlers that end the job spans and shut telemetry down (SIGINT only when it
// was not ignored). Call resolve_parallelism first.
// Errors are setup's one-line errors; nothing is installed then.
Status set_telemetry(const TrainingArgs& args, const RankInfo& rank,
                     SetTelemetryOptions options = {});

// The handle set_telemetry made; null before it, after reset_telemetry, or when it failed.
std::shared_ptr<TelemetryHandle> get_telemetry() noexcept;

// The long-lived spans end_job_telemetry ends: the startup span (process start to first step)
// and the current log-interval span. Setting one replaces the previous (ending it).
enum class JobSpan { startup, interval };
void set_job_span(JobSpan which, Span span) noexcept;

// Ends the interval span, then the startup span, then shuts telemetry down within `timeout` —
// the first call only; later calls (atexit after a normal end, SIGTERM during shutdown) do nothing.
// Returns the shutdown's status.
Status end_job_telemetry(
    std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) noexcept;

// As end_job_telemetry, after `signal` (SIGTERM or SIGINT) interrupted the run: the job spans end
// with an error status "interrupted by SIGINT" (or SIGTERM) and nemo.span.truncated = true plus
// a nemo.span.truncated event giving the same reason. The exit hooks call it from their watcher
// thread; a trainer with its own signal handling may call it from a thread (never from a
// signal handler).
Status end_job_telemetry_interrupted(
    int signal, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) noexcept;

// Forgets the handle and job spans (after end_job_telemetry) so that a test may set telemetry up
// again. The exit hooks stay installed and act on whatever is set then.
void reset_telemetry() noexcept;

}  // namespace lens::megatron
