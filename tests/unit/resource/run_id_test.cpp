// Run identification (docs/resources.md, "Run identification"): every source in priority order with
// exact values and sources, the collective path simulated with one thread per rank, and the random
// fallback.
// Tests use injected environments only; the collective fakes are per-test objects.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/rank_info.hpp"
#include "lens/resource.hpp"
#include "unit/support/test_support.hpp"
#include "unit/support/thread_collective.hpp"

namespace lens {
namespace {

using lens::test_support::failure_of;

bool is_lower_hex12(const std::string& text) {
  if (text.size() != 12) {
    return false;
  }
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

using test_support::config_from;
using test_support::rank_of;
using test_support::run_ranks;
using test_support::ThreadCollective;

RunId resolve_ok(const Config& config, const Env::Map& variables,
                 Collective* collective = nullptr) {
  auto id = resolve_run_id(config, rank_of(0, 1), Env::from(variables), collective);
  EXPECT_TRUE(id.ok()) << id.message();
  return id.ok() ? *id : RunId{};
}

void expect_id(const RunId& id, const std::string& value, const std::string& source) {
  EXPECT_EQ(id.value, value);
  EXPECT_EQ(id.source, source);
}

// Every launcher variable at once, so each case below removes what outranks it.
const Env::Map kAllSources = {
    {"SLURM_JOB_ID", "4242"},
    {"TORCHELASTIC_RUN_ID", "elastic-77"},
    {"OMPI_MCA_ess_base_jobid", "3735552001"},
    {"PMIX_NAMESPACE", "prterun-node1-12345@1"},
};

Env::Map without(Env::Map variables, std::initializer_list<std::string> names) {
  for (const auto& name : names) {
    variables.erase(name);
  }
  return variables;
}

// A collective that records its calls; broadcast is answered by a callback.
class RecordingCollective : public Collective {
 public:
  RecordingCollective(int rank, int world_size, Result<std::string> answer)
      : rank_(rank), world_size_(world_size), answer_(std::move(answer)) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  Result<std::string> broadcast(const std::string& payload, int root) override {
    payloads.push_back(payload);
    roots.push_back(root);
    return answer_;
  }
  std::vector<std::string> payloads;
  std::vector<int> roots;

 private:
  int rank_;
  int world_size_;
  Result<std::string> answer_;
};

TEST(RunIdPriority, ExplicitRunIdBeatsEveryLauncherVariable) {
  Env::Map variables = kAllSources;
  variables["NEMO_LENS_RUN_ID"] = "  my-run-1  ";
  const RunId id = resolve_ok(config_from(variables), variables);
  expect_id(id, "my-run-1", "env:NEMO_LENS_RUN_ID");
  EXPECT_EQ(id.warning, "");
}

TEST(RunIdPriority, PrefixedRunIdNamesTheVariableThatHeldIt) {
  Env::Map primary = kAllSources;
  primary["MEGATRON_OTEL_RUN_ID"] = "mega-1";
  primary["NEMO_LENS_RUN_ID"] = "lens-1";
  RunId id = resolve_ok(config_from(primary, "MEGATRON_OTEL", "NEMO_LENS"), primary);
  expect_id(id, "mega-1", "env:MEGATRON_OTEL_RUN_ID");

  Env::Map fallback = kAllSources;
  fallback["MEGATRON_OTEL_RUN_ID"] = "   ";
  fallback["NEMO_LENS_RUN_ID"] = "lens-1";
  id = resolve_ok(config_from(fallback, "MEGATRON_OTEL", "NEMO_LENS"), fallback);
  expect_id(id, "lens-1", "env:NEMO_LENS_RUN_ID");
}

TEST(RunIdPriority, RunIdSetInCodeReportsConfigAsSource) {
  Config config;
  config.run_id = " code-run ";
  const RunId id = resolve_ok(config, kAllSources);
  expect_id(id, "code-run", "config.run_id");
  EXPECT_EQ(id.warning, "");
}

TEST(RunIdPriority, BlankConfigRunIdCountsAsUnset) {
  Config config;
  config.run_id = "   ";
  const RunId id = resolve_ok(config, kAllSources);
  expect_id(id, "4242", "env:SLURM_JOB_ID");
}

TEST(RunIdPriority, SlurmJobIdBeatsLauncherIds) {
  const RunId id = resolve_ok(Config{}, kAllSources);
  expect_id(id, "4242", "env:SLURM_JOB_ID");
  EXPECT_EQ(id.warning, "");
}

TEST(RunIdPriority, TorchElasticRunIdComesNext) {
  Env::Map variables = without(kAllSources, {"SLURM_JOB_ID"});
  variables["SLURM_JOB_ID"] = "  ";  // blank counts as unset
  const RunId id = resolve_ok(Config{}, variables);
  expect_id(id, "elastic-77", "env:TORCHELASTIC_RUN_ID");
}

TEST(RunIdPriority, TorchElasticNoneIsIgnored) {
  for (const std::string none : {"none", "None", " none "}) {
    Env::Map variables = without(kAllSources, {"SLURM_JOB_ID"});
    variables["TORCHELASTIC_RUN_ID"] = none;
    const RunId id = resolve_ok(Config{}, variables);
    EXPECT_EQ(id.value, "3735552001") << none;
    EXPECT_EQ(id.source, "env:OMPI_MCA_ess_base_jobid") << none;
  }
}

TEST(RunIdPriority, OpenMpiJobIdBeatsPmixNamespace) {
  const RunId id =
      resolve_ok(Config{}, without(kAllSources, {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"}));
  expect_id(id, "3735552001", "env:OMPI_MCA_ess_base_jobid");
}

TEST(RunIdPriority, PmixNamespaceIsTheLastLauncherSource) {
  const RunId id = resolve_ok(
      Config{}, {{"PMIX_NAMESPACE", " prterun-node1-12345@1 "}, {"OMPI_MCA_ess_base_jobid", ""}});
  expect_id(id, "prterun-node1-12345@1", "env:PMIX_NAMESPACE");
  EXPECT_EQ(id.warning, "");
}

TEST(RunIdPriority, LauncherSourcesDoNotTouchTheCollective) {
  RecordingCollective collective(0, 2, std::string("unused"));
  const RunId id = resolve_ok(Config{}, {{"TORCHELASTIC_RUN_ID", "te-1"}}, &collective);
  EXPECT_EQ(id.value, "te-1");
  EXPECT_TRUE(collective.payloads.empty());
}

TEST(RunIdCollective, AllRanksShareRankZerosRandomId) {
  constexpr int kWorldSize = 4;
  ThreadCollective::Shared slot;
  std::vector<std::optional<Result<RunId>>> results(kWorldSize);
  const auto collectives = run_ranks(kWorldSize, slot, [&](int r, Collective& collective) {
    results[static_cast<std::size_t>(r)] =
        resolve_run_id(Config{}, rank_of(r, kWorldSize), Env::from({}), &collective);
  });
  ASSERT_TRUE(results[0].has_value() && results[0]->ok());
  const std::string shared = results[0]->value().value;
  EXPECT_TRUE(is_lower_hex12(shared)) << shared;
  for (int r = 0; r < kWorldSize; ++r) {
    const auto& result = results[static_cast<std::size_t>(r)];
    ASSERT_TRUE(result.has_value() && result->ok()) << "rank " << r;
    EXPECT_EQ(result->value().value, shared) << "rank " << r;
    EXPECT_EQ(result->value().source, "collective") << "rank " << r;
    EXPECT_EQ(result->value().warning, "") << "rank " << r;
    const auto& collective = collectives[static_cast<std::size_t>(r)];
    EXPECT_EQ(collective.root_seen, 0) << "rank " << r;
    // Only the root contributes a payload; the others send nothing.
    EXPECT_EQ(collective.sent, r == 0 ? shared : std::string()) << "rank " << r;
  }
}

TEST(RunIdCollective, NonRootTakesWhatTheBroadcastDelivers) {
  RecordingCollective collective(3, 8, std::string(" abcdef012345 "));
  const auto id = resolve_run_id(Config{}, rank_of(3, 8), Env::from({}), &collective);
  ASSERT_TRUE(id.ok()) << id.message();
  EXPECT_EQ(id->value, "abcdef012345");
  EXPECT_EQ(id->source, "collective");
  ASSERT_EQ(collective.payloads.size(), 1U);
  EXPECT_EQ(collective.payloads[0], "");
  EXPECT_EQ(collective.roots[0], 0);
}

TEST(RunIdCollective, BroadcastErrorIsReturned) {
  RecordingCollective collective(1, 2, Error("MPI_Bcast failed: MPI_ERR_COMM"));
  const auto id = resolve_run_id(Config{}, rank_of(1, 2), Env::from({}), &collective);
  ASSERT_EQ(failure_of(id),
            "resolving the run id: broadcast from rank 0 failed: MPI_Bcast failed: MPI_ERR_COMM");
}

TEST(RunIdCollective, EmptyBroadcastIsAnError) {
  RecordingCollective collective(1, 2, std::string("  "));
  const auto id = resolve_run_id(Config{}, rank_of(1, 2), Env::from({}), &collective);
  ASSERT_EQ(failure_of(id),
            "resolving the run id: the broadcast from rank 0 delivered an empty id");
}

TEST(RunIdRandom, PerProcessFallbackWarns) {
  const auto id = resolve_run_id(Config{}, rank_of(2, 4), Env::from({}));
  ASSERT_TRUE(id.ok()) << id.message();
  EXPECT_TRUE(is_lower_hex12(id->value)) << id->value;
  EXPECT_EQ(id->source, "random");
  EXPECT_EQ(id->warning,
            "rank 2 uses the random run id '" + id->value +
                "' (nemo.run.id), made by this process alone, so ranks will not share it; set "
                "NEMO_LENS_RUN_ID to the same value on every rank (or launch with SLURM or "
                "torchrun, or pass a Collective to setup)");
  EXPECT_EQ(id->warning.find('\n'), std::string::npos);
}

TEST(RunIdRandom, ASingleProcessJobNeedsNoWarning) {
  const auto id = resolve_run_id(Config{}, rank_of(0, 1), Env::from({}));
  ASSERT_TRUE(id.ok()) << id.message();
  EXPECT_TRUE(is_lower_hex12(id->value)) << id->value;
  EXPECT_EQ(id->source, "random");
  EXPECT_EQ(id->warning, "");
}

TEST(RunIdRandom, WarningNamesThePrefixedVariable) {
  const Config config = config_from({}, "MEGATRON_OTEL", "NEMO_LENS");
  const auto id = resolve_run_id(config, rank_of(0, 2), Env::from({}));
  ASSERT_TRUE(id.ok()) << id.message();
  EXPECT_NE(id->warning.find("set MEGATRON_OTEL_RUN_ID or NEMO_LENS_RUN_ID to the same value"),
            std::string::npos)
      << id->warning;
}

TEST(RunIdRandom, TwoCallsDiffer) {
  const auto first = resolve_run_id(Config{}, rank_of(0, 1), Env::from({}));
  const auto second = resolve_run_id(Config{}, rank_of(0, 1), Env::from({}));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(first->value, second->value);
}

TEST(RunIdRandom, RandomIdsAreTwelveLowerHexAndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = random_run_id();
    ASSERT_TRUE(is_lower_hex12(id)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000U);
}

}  // namespace
}  // namespace lens
