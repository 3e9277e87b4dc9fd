// `lens collect` and `lens run` with output paths that are not regular files (a device through a
// symbolic link, a FIFO, a file where the directory goes): one line and exit status 1 at start,
// never a hang; and `lens run` with a rank whose daemon child keeps the output pipe open, or
// whose report cannot be written. Loopback only; every process runs under a deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/run_process.hpp"

namespace lens {
namespace {

namespace fs = std::filesystem;
using testing::ProcessResult;
using testing::run_process;

// A fresh directory of this test, removed at the end.
class OutputPathsDir {
 public:
  explicit OutputPathsDir(const std::string& name)
      : path_(fs::path(::testing::TempDir()) /
              ("lens-output-paths-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~OutputPathsDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Every command here must end by itself well before this (the bound is not a timing check: a
// hang is what it catches).
constexpr auto kOutputPathsDeadline = std::chrono::seconds(30);

ProcessResult output_paths_collect(const fs::path& out) {
  return run_process(LENS_CLI_PATH,
                     {"collect", "--grpc", "off", "--http", "127.0.0.1:0", "--out", out.string()},
                     std::nullopt, kOutputPathsDeadline);
}

ProcessResult output_paths_run(const fs::path& out, const std::vector<std::string>& program) {
  std::vector<std::string> args{"run", "--out", out.string(), "--"};
  args.insert(args.end(), program.begin(), program.end());
  return run_process(LENS_CLI_PATH, args, std::nullopt, kOutputPathsDeadline);
}

TEST(OutputPaths, CollectRefusesADeviceAsItsTracesFile) {
  OutputPathsDir dir("collect-device");
  const fs::path out = dir.path() / "out";
  fs::create_directories(out);
  fs::create_symlink("/dev/full", out / "traces.jsonl");
  const ProcessResult result = output_paths_collect(out);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "lens collect: cannot write traces.jsonl: '" + out.string() +
                            "/traces.jsonl' is a character device, not a regular file; "
                            "accepted: a regular file or no file at that path\n");
}

TEST(OutputPaths, CollectRefusesAFifoWithoutBlockingOnIt) {
  OutputPathsDir dir("collect-fifo");
  const fs::path out = dir.path() / "out";
  fs::create_directories(out);
  ASSERT_EQ(::mkfifo((out / "logs.jsonl").c_str(), 0644), 0);
  const ProcessResult result = output_paths_collect(out);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "lens collect: cannot write logs.jsonl: '" + out.string() +
                            "/logs.jsonl' is a FIFO, not a regular file; accepted: a regular "
                            "file or no file at that path\n");
}

TEST(OutputPaths, CollectRefusesAFileAsItsDirectory) {
  OutputPathsDir dir("collect-file");
  const fs::path out = dir.path() / "out";
  std::ofstream(out) << "not a directory\n";
  const ProcessResult result = output_paths_collect(out);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "lens collect: cannot use the output directory: '" + out.string() +
                            "' is a regular file, not a directory; accepted: a directory or no "
                            "file at that path\n");
}

TEST(OutputPaths, RunRefusesADeviceAndAFifoBeforeStartingARank) {
  OutputPathsDir dir("run");
  const fs::path marker = dir.path() / "rank-started";
  const std::vector<std::string> program = {"sh", "-c", "touch " + marker.string()};
  {
    const fs::path out = dir.path() / "device";
    fs::create_directories(out);
    fs::create_symlink("/dev/full", out / "traces.jsonl");
    const ProcessResult result = output_paths_run(out, program);
    EXPECT_FALSE(result.timed_out);
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(result.err, "lens run: cannot write traces.jsonl: '" + out.string() +
                              "/traces.jsonl' is a character device, not a regular file; "
                              "accepted: a regular file or no file at that path\n");
  }
  {
    const fs::path out = dir.path() / "fifo";
    fs::create_directories(out / "logs");
    ASSERT_EQ(::mkfifo((out / "logs" / "rank0.log").c_str(), 0644), 0);
    const ProcessResult result = output_paths_run(out, program);
    EXPECT_FALSE(result.timed_out);
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(result.err, "lens run: cannot write the log of rank 0: '" + out.string() +
                              "/logs/rank0.log' is a FIFO, not a regular file; accepted: a "
                              "regular file or no file at that path\n");
  }
  EXPECT_FALSE(fs::exists(marker));
}

TEST(OutputPaths, RunDoesNotWaitForADaemonThatKeepsTheRankOutputOpen) {
  OutputPathsDir dir("run-daemon");
  const fs::path pid_file = dir.path() / "daemon.pid";
  // The daemon has a session of its own (out of the rank's process group) and the rank's
  // stdout; it would hold the pipe for 60 s.
  const std::string script =
      "setsid sh -c 'echo $$ > " + pid_file.string() + "; exec sleep 60' & echo rank is done";
  const ProcessResult result = output_paths_run(dir.path() / "out", {"sh", "-c", script});
  pid_t daemon = 0;
  for (int i = 0; i < 100 && daemon == 0; ++i) {
    std::ifstream(pid_file) >> daemon;
    if (daemon == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (daemon > 0) ::kill(daemon, SIGKILL);
  EXPECT_GT(daemon, 0);
  EXPECT_FALSE(result.timed_out);
  EXPECT_THAT(result.out, ::testing::HasSubstr("[rank 0] rank is done\n"));
  EXPECT_THAT(result.out,
              ::testing::HasSubstr("lens run: rank 0 ended but a process it started still holds "
                                   "its output open; no longer reading it (2 s after the last "
                                   "rank ended)\n"));
  // No telemetry arrived, so there is no report: not a success.
  EXPECT_EQ(result.exit_code, 1);
}

TEST(OutputPaths, RunExitsNonZeroWhenTheReportIsNotWritten) {
  OutputPathsDir dir("run-no-report");
  const ProcessResult result = output_paths_run(dir.path() / "out", {"true"});
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.err, ::testing::HasSubstr(
                              "lens run: no report was written (lens report exited with 2)\n"));
  EXPECT_THAT(result.out,
              ::testing::EndsWith("lens run: ended with status 1; no report was written\n"));
}

}  // namespace
}  // namespace lens
