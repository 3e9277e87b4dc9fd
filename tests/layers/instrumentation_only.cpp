// Instrumented code as a library of a training job would write it: spans, a log record and a
// metric instrument, built and linked against lens::instrumentation only (no SDK target, no
// setup header). It runs without setup: everything records nothing and nothing fails
// (tests/CMakeLists.txt, layers.instrumentation_only_runs; tests/consumer, installed).
#include <opentelemetry/metrics/provider.h>

#include <cstdio>

#include "lens/log.hpp"
#include "lens/metrics.hpp"
#include "lens/span.hpp"

int main() {
  lens::ScopedSpan step("train_step", {{"megatron.iteration", 7}});
  step.set_attribute("phase", "forward");
  lens::log::emit(lens::log::Level::info, "step done", {{"megatron.iteration", 7}});
  auto meter = opentelemetry::metrics::Provider::GetMeterProvider()->GetMeter("instrumented");
  auto tokens = lens::metrics::make_counter<std::uint64_t>(*meter, "trainer.tokens");
  tokens.add(4096, {{"phase", "forward"}});
  const bool recording = step.context().IsValid();
  std::printf("instrumented without setup: span recording %s\n", recording ? "yes" : "no");
  return recording ? 1 : 0;
}
