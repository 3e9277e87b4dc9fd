// The cost of lens::note_step_completed(), the hang watchdog's per-step call (once per training
// step, not per span): a steady_clock read and a few atomic operations. No telemetry is set up:
// the call does the same work either way (the watchdog only reads what it writes).
// Single-threaded.
#include <benchmark/benchmark.h>

#include "lens/step_progress.hpp"

namespace {

void BM_NoteStepCompleted(benchmark::State& state) {
  for (auto _ : state) {
    lens::note_step_completed();
  }
}
BENCHMARK(BM_NoteStepCompleted);

}  // namespace
