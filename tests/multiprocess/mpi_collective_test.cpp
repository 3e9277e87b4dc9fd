// MpiCollective under a real `mpirun -np 4` (registered in CTest by tests/multiprocess): every
// rank runs the same tests in the same order, so each collective call is matched on all ranks.
// Checks byte-exact broadcasts from every root, the shared run id (docs/resources.md, "Run
// identification") through resolve_run_id and setup_telemetry, and broadcast_trace_context
// (docs/distributed.md).
#include "lens/mpi_collective.hpp"

#include <gtest/gtest.h>
#include <mpi.h>
#include <opentelemetry/trace/scope.h>

#include <string>
#include <vector>

#include "lens/config.hpp"
#include "lens/distributed.hpp"
#include "lens/rank_info.hpp"
#include "lens/resource.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"

namespace lens {
namespace {

constexpr int kRanks = 4;

std::unique_ptr<MpiCollective> make_collective() {
  auto collective = MpiCollective::create();
  EXPECT_TRUE(collective.ok()) << collective.message();
  return collective.ok() ? std::move(*collective) : nullptr;
}

// Every rank's string, gathered on every rank.
std::vector<std::string> all_gather(const std::string& mine) {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(kRanks);
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<int> offsets(kRanks, 0);
  int total = 0;
  for (int r = 0; r < kRanks; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string buffer(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, buffer.data(), lengths.data(), offsets.data(),
                 MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < kRanks; ++r) out.push_back(buffer.substr(offsets[r], lengths[r]));
  return out;
}

// setup_telemetry on this rank with every rank exporting to nowhere; `extra` adds variables.
// With share_run_id the collective agrees the run id across ranks.
Result<TelemetryHandle> setup_on_every_rank(MpiCollective& collective, Env::Map extra,
                                            bool share_run_id) {
  extra.insert({{"NEMO_LENS_ENABLED", "1"},
                {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
                {"NEMO_LENS_EXPORTER", "none"}});
  const Env env = Env::from(extra);
  auto config = Config::from_env("NEMO_LENS", {}, env);
  if (!config.ok()) return Error(config.message());
  auto rank = RankInfo::make(collective.rank(), kRanks);
  if (!rank.ok()) return Error(rank.message());
  SetupOverrides overrides;
  overrides.env = env;
  if (share_run_id) overrides.collective = &collective;
  return setup_telemetry(*config, *rank, {}, std::move(overrides));
}

TEST(MpiCollective, RankAndSizeAreThoseOfTheCommunicator) {
  auto collective = make_collective();
  ASSERT_NE(collective, nullptr);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  EXPECT_EQ(collective->rank(), rank);
  EXPECT_EQ(collective->world_size(), kRanks);
}

TEST(MpiCollective, BroadcastDeliversTheRootsBytesFromEveryRoot) {
  auto collective = make_collective();
  ASSERT_NE(collective, nullptr);
  for (int root = 0; root < kRanks; ++root) {
    // Binary bytes, a NUL among them, and a size that is not a multiple of anything.
    std::string expected = "root-" + std::to_string(root) + std::string(1, '\0') + "\xff\x01";
    expected += std::string(100003, static_cast<char>('a' + root));
    const std::string mine = collective->rank() == root ? expected : "ignored on receivers";
    Result<std::string> got = collective->broadcast(mine, root);
    ASSERT_TRUE(got.ok()) << got.message();
    EXPECT_EQ(*got, expected) << "root " << root;
  }
  Result<std::string> empty = collective->broadcast("", 1);
  ASSERT_TRUE(empty.ok()) << empty.message();
  EXPECT_EQ(*empty, "");
}

TEST(MpiCollective, RootOutsideTheCommunicatorIsAnErrorOnEveryRank) {
  auto collective = make_collective();
  ASSERT_NE(collective, nullptr);
  Result<std::string> got = collective->broadcast("x", kRanks);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.message(),
            "MpiCollective: broadcast root 4 is not a rank of this communicator; accepted: 0..3");
}

TEST(MpiCollective, RanksShareRankZerosGeneratedRunId) {
  auto collective = make_collective();
  ASSERT_NE(collective, nullptr);
  const Env env = Env::from({});  // no launcher id: rank 0 generates one and broadcasts it
  auto config = Config::from_env("NEMO_LENS", {}, env);
  ASSERT_TRUE(config.ok());
  auto rank = RankInfo::make(collective->rank(), kRanks);
  ASSERT_TRUE(rank.ok());
  auto id = resolve_run_id(*config, *rank, env, collective.get());
  ASSERT_TRUE(id.ok()) << id.message();
  EXPECT_EQ(id->source, "collective");
  EXPECT_EQ(id->value.size(), 12U);
  const std::vector<std::string> ids = all_gather(id->value);
  for (const std::string& other : ids) EXPECT_EQ(other, ids[0]);
}

TEST(MpiCollective, SetupOnEveryRankGivesOneRunIdAndPerRankInstanceIds) {
  auto collective = make_collective();
  ASSERT_NE(collective, nullptr);
  auto handle = setup_on_every_rank(*collective, {}, /*share_run_id=*/true);
  ASSERT_TRUE(handle.ok()) << handle.message();
  EXPECT_TRUE(handle->is_exporting());
  const std::vector<std::string> ids = all_gather(handle->run_id());
  for (const std::string& other : ids) EXPECT_EQ(other, ids[0]);
  const auto instance = handle->resource().find("service.instance.id");
  ASSERT_NE(instance, handle->resource().end());
  EXPECT_EQ(to_string(instance->second),
            handle->run_id() + "-rank" + std::to_string(collective->rank()));
  EXPECT_TRUE(handle->shutdown(std::chrono::milliseconds(5000)).ok());
}

TEST(MpiCollective, BroadcastTraceContextGivesEveryRankTheSourcesSpan) {
  auto collective = make_collective();
  ASSERT_NE(collective, nullptr);
  auto handle =
      setup_on_every_rank(*collective, {{"NEMO_LENS_RUN_ID", "mpi-test"}}, /*share_run_id=*/false);
  ASSERT_TRUE(handle.ok()) << handle.message();

  // Every rank has its own active span; only the source's (rank 2) may come back.
  auto span = handle->tracer()->StartSpan("step");
  opentelemetry::trace::Scope scope(span);
  std::optional<Carrier> carrier = broadcast_trace_context(collective.get(), 2);
  ASSERT_TRUE(carrier.has_value());
  ASSERT_EQ(carrier->count("traceparent"), 1U);
  const std::vector<std::string> received = all_gather(carrier->at("traceparent"));
  Carrier mine;
  inject_context(mine);
  const std::vector<std::string> sent = all_gather(mine.at("traceparent"));
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(received[r], sent[2]) << "rank " << r;
  span->End();
  EXPECT_TRUE(handle->shutdown(std::chrono::milliseconds(5000)).ok());
}

}  // namespace
}  // namespace lens

// One gtest run per rank, between MPI_Init and MPI_Finalize; any rank's failure fails mpirun.
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int result = 1;
  if (size != lens::kRanks) {
    std::fprintf(stderr, "mpi_collective_test: run it with mpirun -np %d (got %d ranks)\n",
                 lens::kRanks, size);
  } else {
    result = RUN_ALL_TESTS();
  }
  int worst = result;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
