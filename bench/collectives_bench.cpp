// The cost of counting one collective (lens/collectives.hpp): entering and finishing it on its
// process group's counter, as the trainer does around each all-reduce, send and receive (goal
// from issue 33: <= 20 ns for both together). Precondition, checked after the loop: every
// collective was counted (the sequence number advanced once per iteration and the last one is
// finished); otherwise the benchmark fails (SkipWithError). Single-threaded.
#include <benchmark/benchmark.h>

#include "lens/collectives.hpp"

namespace {

void BM_CountCollective(benchmark::State& state) {
  lens::CollectiveGroup& group = lens::collective_group("bench.dp", {0, 1, 2, 3, 4, 5, 6, 7});
  const std::uint64_t before = group.state().seq;
  for (auto _ : state) {
    lens::CountedCollective counted(group, "all_reduce", 1 << 20);
    benchmark::DoNotOptimize(counted.seq());
  }
  const lens::CollectiveGroup::State after = group.state();
  const auto counted = static_cast<std::uint64_t>(state.iterations());
  if (after.seq != before + counted || after.finished_seq != after.seq || after.inside()) {
    state.SkipWithError(
        "collectives were not counted: the sequence number did not advance once "
        "per collective");
  }
}
BENCHMARK(BM_CountCollective);

}  // namespace
