// Benchmarks of the span-group gate: the per-site cost of a disabled and an enabled group
// through a cached handle (one relaxed load), and of a lookup by name (shared lock + set find).
// Single-threaded; the enabled state is set once per benchmark.
#include <benchmark/benchmark.h>

#include "lens/groups.hpp"

namespace {

void BM_SpanGroup_HandleDisabled(benchmark::State& state) {
  lens::set_enabled_span_groups({});
  const auto handle = lens::span_group_handle(lens::groups::kStep);
  for (auto _ : state) {
    benchmark::DoNotOptimize(handle.enabled());
  }
}
BENCHMARK(BM_SpanGroup_HandleDisabled);

void BM_SpanGroup_HandleEnabled(benchmark::State& state) {
  lens::set_enabled_span_groups({std::string(lens::groups::kStep)});
  const auto handle = lens::span_group_handle(lens::groups::kStep);
  for (auto _ : state) {
    benchmark::DoNotOptimize(handle.enabled());
  }
  lens::set_enabled_span_groups({});
}
BENCHMARK(BM_SpanGroup_HandleEnabled);

void BM_SpanGroup_IsEnabledByName(benchmark::State& state) {
  auto resolved = lens::resolve_span_groups("per_step");
  lens::set_enabled_span_groups(resolved.ok() ? *resolved : std::set<std::string>{});
  for (auto _ : state) {
    benchmark::DoNotOptimize(lens::is_span_group_enabled(lens::groups::kStep));
  }
  lens::set_enabled_span_groups({});
}
BENCHMARK(BM_SpanGroup_IsEnabledByName);

}  // namespace
