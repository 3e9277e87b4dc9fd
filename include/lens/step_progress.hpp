// The "step" the hang watchdog watches (docs/configuration.md, HANG_TIMEOUT): a training loop
// calls lens::note_step_completed() once each time a step (one optimizer update) has finished.
// When no step finishes for the hang timeout, each exporting rank reports where it is: the
// spans open on each of its threads, with how long each has been open (on stderr, one line, and
// as a log record `lens.hang` while the job hangs); a step finishing after that reports
// `lens.hang.resumed`. The Megatron example calls it right after each megatron.train_step span.
//
// Cost: a steady_clock read and a few relaxed atomic operations per step; nothing on the span
// path. Works whether or not telemetry is set up (the watchdog reads it when it is).
// Thread-safety: may be called from any thread; steps noted concurrently all count.
#pragma once

namespace lens {

void note_step_completed() noexcept;

// Says that this process trains, so that it is watched from setup until its first step with the
// start-up timeout (HANG_STARTUP_TIMEOUT, default 600 s): a hang in initialisation, checkpoint
// load or the first collective is reported too. Without it only steps are watched (an inference
// server never reports). Call it before setup; lens::megatron::set_telemetry calls it.
void expect_training_steps() noexcept;

}  // namespace lens
