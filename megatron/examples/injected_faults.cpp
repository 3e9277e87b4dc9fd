// The example trainer's injected faults (see injected_faults.hpp): sleeps, endless waits and an
// exit that skips every exit hook.
#include "injected_faults.hpp"

#include <unistd.h>

#include <cstdio>
#include <thread>

namespace lens::megatron::example {

void Slowdown::apply(SlowStage at, int iteration, int parts) const {
  if (at != stage || per_iteration.count() <= 0 || iteration < from) return;
  std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::microseconds>(per_iteration) /
                              parts);
}

void Hang::apply(SlowStage where, int iteration) const {
  if (where != stage || iteration != at) return;
  std::fprintf(stderr, "simple_train_loop: hanging at iteration %d (--hang-at)\n", iteration);
  forever();
}

void Hang::apply_at_startup() const {
  if (!at_startup) return;
  std::fprintf(stderr, "simple_train_loop: hanging in start-up (--hang-at-startup)\n");
  forever();
}

void Hang::forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void Crash::apply(int iteration) const {
  if (iteration != at) return;
  // Dies as a killed process does, mid-step and without flushing telemetry (_exit skips the
  // atexit hook that ends the job spans).
  std::fprintf(stderr, "simple_train_loop: crashing in iteration %d (--crash-at)\n", iteration);
  ::_exit(kCrashStatus);
}

}  // namespace lens::megatron::example
