// RankInfo::detect for each launcher (torchrun, Open MPI, MPICH/PMI, SLURM, none), their
// precedence, every error message, and RankInfo::make.
// Tests build an Env from a map; the process environment is never touched.
#include "lens/rank_info.hpp"

#include <gtest/gtest.h>

#include <string>

#include "lens/env.hpp"

namespace lens {
namespace {

RankInfo detect_ok(Env::Map vars) {
  auto result = RankInfo::detect(Env::from(std::move(vars)));
  EXPECT_TRUE(result.ok()) << result.message();
  return result.ok() ? *result : RankInfo{};
}

std::string detect_error(Env::Map vars) {
  auto result = RankInfo::detect(Env::from(std::move(vars)));
  EXPECT_FALSE(result.ok());
  return result.message();
}

void expect_info(const RankInfo& info, int rank, int world_size, int local_rank,
                 int local_world_size, int node_rank, const std::string& source) {
  EXPECT_EQ(info.rank, rank);
  EXPECT_EQ(info.world_size, world_size);
  EXPECT_EQ(info.local_rank, local_rank);
  EXPECT_EQ(info.local_world_size, local_world_size);
  EXPECT_EQ(info.node_rank, node_rank);
  EXPECT_EQ(info.source, source);
}

TEST(RankInfoDetect, NoLauncherIsASingleProcess) {
  expect_info(detect_ok({}), 0, 1, 0, 1, 0, "default");
}

TEST(RankInfoDetect, NoLauncherStillReadsLocalRank) {
  // As the Python first_rank_per_node does: LOCAL_RANK alone is honoured.
  expect_info(detect_ok({{"LOCAL_RANK", "3"}}), 0, 1, 3, 4, 0, "default");
  expect_info(detect_ok({{"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "8"}}), 0, 1, 2, 8, 0,
              "default");
}

TEST(RankInfoDetect, NoLauncherBadLocalRankIsAnError) {
  EXPECT_EQ(detect_error({{"LOCAL_RANK", "x"}}),
            "Invalid LOCAL_RANK: 'x'; expected a non-negative integer");
  EXPECT_EQ(detect_error({{"LOCAL_RANK", "4"}, {"LOCAL_WORLD_SIZE", "4"}}),
            "Inconsistent local rank: LOCAL_RANK=4 is not less than LOCAL_WORLD_SIZE=4");
}

TEST(RankInfoDetect, Torchrun) {
  expect_info(detect_ok({{"RANK", "5"},
                         {"WORLD_SIZE", "16"},
                         {"LOCAL_RANK", "1"},
                         {"LOCAL_WORLD_SIZE", "4"},
                         {"GROUP_RANK", "1"}}),
              5, 16, 1, 4, 1, "torchrun");
}

TEST(RankInfoDetect, TorchrunValuesAreTrimmed) {
  expect_info(detect_ok({{"RANK", " 5 "},
                         {"WORLD_SIZE", "\t16\n"},
                         {"LOCAL_RANK", " 1"},
                         {"LOCAL_WORLD_SIZE", "4 "},
                         {"GROUP_RANK", " 1 "}}),
              5, 16, 1, 4, 1, "torchrun");
}

TEST(RankInfoDetect, TorchrunWithoutLocalVariables) {
  expect_info(detect_ok({{"RANK", "3"}, {"WORLD_SIZE", "4"}}), 3, 4, 0, 1, 0, "torchrun");
}

TEST(RankInfoDetect, MissingLocalWorldSizeIsTheSmallestConsistentSize) {
  expect_info(detect_ok({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}}), 3, 4, 2, 3, 0,
              "torchrun");
}

TEST(RankInfoDetect, MissingNodeRankIsDerivedFromTheLocalWorldSize) {
  expect_info(
      detect_ok(
          {{"RANK", "13"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}}),
      13, 16, 1, 4, 3, "torchrun");
}

TEST(RankInfoDetect, OpenMpi) {
  expect_info(detect_ok({{"OMPI_COMM_WORLD_RANK", "6"},
                         {"OMPI_COMM_WORLD_SIZE", "8"},
                         {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"},
                         {"OMPI_COMM_WORLD_NODE_RANK", "1"}}),
              6, 8, 2, 4, 1, "openmpi");
}

TEST(RankInfoDetect, MpichPmiWithLocalVariables) {
  expect_info(detect_ok({{"PMI_RANK", "5"},
                         {"PMI_SIZE", "8"},
                         {"MPI_LOCALRANKID", "1"},
                         {"MPI_LOCALNRANKS", "4"}}),
              5, 8, 1, 4, 1, "pmi");
}

TEST(RankInfoDetect, MpichPmiWithoutLocalVariables) {
  expect_info(detect_ok({{"PMI_RANK", "5"}, {"PMI_SIZE", "8"}}), 5, 8, 0, 1, 0, "pmi");
}

TEST(RankInfoDetect, Slurm) {
  expect_info(detect_ok({{"SLURM_PROCID", "9"},
                         {"SLURM_NTASKS", "16"},
                         {"SLURM_LOCALID", "1"},
                         {"SLURM_NTASKS_PER_NODE", "8"},
                         {"SLURM_NODEID", "1"}}),
              9, 16, 1, 8, 1, "slurm");
}

TEST(RankInfoDetect, SlurmLocalWorldSizeFromTasksPerNode) {
  // SLURM_NTASKS_PER_NODE unset: this node's entry of SLURM_TASKS_PER_NODE.
  expect_info(detect_ok({{"SLURM_PROCID", "9"},
                         {"SLURM_NTASKS", "11"},
                         {"SLURM_LOCALID", "1"},
                         {"SLURM_TASKS_PER_NODE", "4(x2),3"},
                         {"SLURM_NODEID", "2"}}),
              9, 11, 1, 3, 2, "slurm");
  expect_info(detect_ok({{"SLURM_PROCID", "5"},
                         {"SLURM_NTASKS", "11"},
                         {"SLURM_LOCALID", "1"},
                         {"SLURM_TASKS_PER_NODE", "4(x2),3"},
                         {"SLURM_NODEID", "1"}}),
              5, 11, 1, 4, 1, "slurm");
}

TEST(RankInfoDetect, SlurmNonIntegerTasksPerNodeFallsBack) {
  // A non-integer SLURM_NTASKS_PER_NODE is ignored; a malformed SLURM_TASKS_PER_NODE too.
  expect_info(detect_ok({{"SLURM_PROCID", "2"},
                         {"SLURM_NTASKS", "4"},
                         {"SLURM_LOCALID", "0"},
                         {"SLURM_NTASKS_PER_NODE", "2(x2)"},
                         {"SLURM_TASKS_PER_NODE", "2(x2)"},
                         {"SLURM_NODEID", "1"}}),
              2, 4, 0, 2, 1, "slurm");
  expect_info(detect_ok({{"SLURM_PROCID", "2"},
                         {"SLURM_NTASKS", "4"},
                         {"SLURM_LOCALID", "0"},
                         {"SLURM_TASKS_PER_NODE", "two"},
                         {"SLURM_NODEID", "1"}}),
              2, 4, 0, 1, 1, "slurm");
}

TEST(RankInfoDetect, SlurmWithoutPerNodeVariables) {
  expect_info(detect_ok({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}}), 3, 4, 0, 1, 0, "slurm");
}

TEST(RankInfoDetect, TorchrunBeatsEveryOtherLauncher) {
  expect_info(detect_ok({{"RANK", "1"},
                         {"WORLD_SIZE", "2"},
                         {"OMPI_COMM_WORLD_RANK", "3"},
                         {"OMPI_COMM_WORLD_SIZE", "4"},
                         {"PMI_RANK", "5"},
                         {"PMI_SIZE", "6"},
                         {"SLURM_PROCID", "7"},
                         {"SLURM_NTASKS", "8"}}),
              1, 2, 0, 1, 0, "torchrun");
}

TEST(RankInfoDetect, OpenMpiBeatsPmiAndSlurm) {
  EXPECT_EQ(detect_ok({{"OMPI_COMM_WORLD_RANK", "3"},
                       {"OMPI_COMM_WORLD_SIZE", "4"},
                       {"PMI_RANK", "5"},
                       {"PMI_SIZE", "6"},
                       {"SLURM_PROCID", "7"},
                       {"SLURM_NTASKS", "8"}})
                .source,
            "openmpi");
}

TEST(RankInfoDetect, PmiBeatsSlurm) {
  const RankInfo info = detect_ok(
      {{"PMI_RANK", "5"}, {"PMI_SIZE", "6"}, {"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}});
  EXPECT_EQ(info.source, "pmi");
  EXPECT_EQ(info.rank, 5);
}

TEST(RankInfoDetect, BlankRankVariableCountsAsUnset) {
  const RankInfo info = detect_ok(
      {{"RANK", "  "}, {"WORLD_SIZE", "x"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
  EXPECT_EQ(info.source, "slurm");
  EXPECT_EQ(info.rank, 1);
}

TEST(RankInfoDetect, InvalidRankErrors) {
  EXPECT_EQ(detect_error({{"RANK", "abc"}, {"WORLD_SIZE", "4"}}),
            "Invalid RANK: 'abc'; expected a non-negative integer");
  EXPECT_EQ(detect_error({{"RANK", "-1"}, {"WORLD_SIZE", "4"}}),
            "Invalid RANK: '-1'; expected a non-negative integer");
  EXPECT_EQ(detect_error({{"RANK", "1.5"}, {"WORLD_SIZE", "4"}}),
            "Invalid RANK: '1.5'; expected a non-negative integer");
  EXPECT_EQ(detect_error({{"RANK", "99999999999"}, {"WORLD_SIZE", "4"}}),
            "Invalid RANK: '99999999999'; expected a non-negative integer");
  // The value is quoted trimmed.
  EXPECT_EQ(detect_error({{"RANK", " x "}, {"WORLD_SIZE", "4"}}),
            "Invalid RANK: 'x'; expected a non-negative integer");
}

TEST(RankInfoDetect, MissingWorldSizeNamesTheVariable) {
  EXPECT_EQ(detect_error({{"RANK", "3"}}),
            "Missing WORLD_SIZE: RANK=3 is set but WORLD_SIZE is not; expected a positive integer");
  EXPECT_EQ(detect_error({{"RANK", "3"}, {"WORLD_SIZE", " "}}),
            "Missing WORLD_SIZE: RANK=3 is set but WORLD_SIZE is not; expected a positive integer");
  EXPECT_EQ(detect_error({{"OMPI_COMM_WORLD_RANK", "0"}}),
            "Missing OMPI_COMM_WORLD_SIZE: OMPI_COMM_WORLD_RANK=0 is set but "
            "OMPI_COMM_WORLD_SIZE is not; expected a positive integer");
  EXPECT_EQ(detect_error({{"PMI_RANK", "0"}}),
            "Missing PMI_SIZE: PMI_RANK=0 is set but PMI_SIZE is not; expected a positive "
            "integer");
  EXPECT_EQ(detect_error({{"SLURM_PROCID", "0"}}),
            "Missing SLURM_NTASKS: SLURM_PROCID=0 is set but SLURM_NTASKS is not; expected a "
            "positive integer");
}

TEST(RankInfoDetect, InvalidWorldSizeErrors) {
  EXPECT_EQ(detect_error({{"RANK", "0"}, {"WORLD_SIZE", "0"}}),
            "Invalid WORLD_SIZE: '0'; expected a positive integer");
  EXPECT_EQ(detect_error({{"RANK", "0"}, {"WORLD_SIZE", "four"}}),
            "Invalid WORLD_SIZE: 'four'; expected a positive integer");
  EXPECT_EQ(detect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "-2"}}),
            "Invalid SLURM_NTASKS: '-2'; expected a positive integer");
}

TEST(RankInfoDetect, RankNotBelowWorldSize) {
  EXPECT_EQ(detect_error({{"RANK", "4"}, {"WORLD_SIZE", "4"}}),
            "Inconsistent rank: RANK=4 is not less than WORLD_SIZE=4");
  EXPECT_EQ(detect_error({{"OMPI_COMM_WORLD_RANK", "9"}, {"OMPI_COMM_WORLD_SIZE", "8"}}),
            "Inconsistent rank: OMPI_COMM_WORLD_RANK=9 is not less than OMPI_COMM_WORLD_SIZE=8");
}

TEST(RankInfoDetect, LocalVariableErrors) {
  EXPECT_EQ(detect_error({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "-1"}}),
            "Invalid LOCAL_RANK: '-1'; expected a non-negative integer");
  EXPECT_EQ(detect_error({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "0"}}),
            "Invalid LOCAL_WORLD_SIZE: '0'; expected a positive integer");
  EXPECT_EQ(
      detect_error(
          {{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}}),
      "Inconsistent local rank: LOCAL_RANK=2 is not less than LOCAL_WORLD_SIZE=2");
  EXPECT_EQ(detect_error({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "4"}}),
            "Inconsistent local rank: LOCAL_RANK=4 is not less than WORLD_SIZE=4");
  EXPECT_EQ(
      detect_error(
          {{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "8"}}),
      "Inconsistent local world size: LOCAL_WORLD_SIZE=8 is greater than WORLD_SIZE=4");
  EXPECT_EQ(detect_error({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"GROUP_RANK", "n1"}}),
            "Invalid GROUP_RANK: 'n1'; expected a non-negative integer");
}

TEST(RankInfoDetect, LocalVariableErrorsNameTheLaunchersVariables) {
  EXPECT_EQ(detect_error({{"OMPI_COMM_WORLD_RANK", "0"},
                          {"OMPI_COMM_WORLD_SIZE", "8"},
                          {"OMPI_COMM_WORLD_LOCAL_RANK", "4"},
                          {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}),
            "Inconsistent local rank: OMPI_COMM_WORLD_LOCAL_RANK=4 is not less than "
            "OMPI_COMM_WORLD_LOCAL_SIZE=4");
  EXPECT_EQ(detect_error({{"PMI_RANK", "0"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "x"}}),
            "Invalid MPI_LOCALRANKID: 'x'; expected a non-negative integer");
  EXPECT_EQ(detect_error({{"SLURM_PROCID", "0"},
                          {"SLURM_NTASKS", "8"},
                          {"SLURM_LOCALID", "2"},
                          {"SLURM_NTASKS_PER_NODE", "2"}}),
            "Inconsistent local rank: SLURM_LOCALID=2 is not less than SLURM_NTASKS_PER_NODE=2");
  EXPECT_EQ(detect_error({{"SLURM_PROCID", "0"},
                          {"SLURM_NTASKS", "8"},
                          {"SLURM_LOCALID", "2"},
                          {"SLURM_TASKS_PER_NODE", "2(x4)"}}),
            "Inconsistent local rank: SLURM_LOCALID=2 is not less than SLURM_TASKS_PER_NODE=2");
  EXPECT_EQ(detect_error({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "8"}, {"SLURM_NODEID", "-3"}}),
            "Invalid SLURM_NODEID: '-3'; expected a non-negative integer");
}

TEST(RankInfoMake, BuildsAnExplicitRankInfo) {
  auto info = RankInfo::make(5, 16, 1, 4, 1);
  ASSERT_TRUE(info.ok()) << info.message();
  expect_info(*info, 5, 16, 1, 4, 1, "explicit");
  auto defaults = RankInfo::make(0, 1);
  ASSERT_TRUE(defaults.ok()) << defaults.message();
  expect_info(*defaults, 0, 1, 0, 1, 0, "explicit");
}

TEST(RankInfoMake, Errors) {
  EXPECT_EQ(RankInfo::make(-1, 4).message(), "Invalid rank: -1; expected a non-negative integer");
  EXPECT_EQ(RankInfo::make(0, 0).message(), "Invalid world_size: 0; expected a positive integer");
  EXPECT_EQ(RankInfo::make(0, 4, -2).message(),
            "Invalid local_rank: -2; expected a non-negative integer");
  EXPECT_EQ(RankInfo::make(0, 4, 0, 0).message(),
            "Invalid local_world_size: 0; expected a positive integer");
  EXPECT_EQ(RankInfo::make(0, 4, 0, 1, -1).message(),
            "Invalid node_rank: -1; expected a non-negative integer");
  EXPECT_EQ(RankInfo::make(4, 4).message(),
            "Inconsistent rank: rank=4 is not less than world_size=4");
  EXPECT_EQ(RankInfo::make(0, 4, 2, 2).message(),
            "Inconsistent local rank: local_rank=2 is not less than local_world_size=2");
  EXPECT_EQ(RankInfo::make(0, 4, 0, 8).message(),
            "Inconsistent local world size: local_world_size=8 is greater than world_size=4");
}

}  // namespace
}  // namespace lens
