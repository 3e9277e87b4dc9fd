// The exit hooks of set_telemetry (docs/megatron.md, "Lifecycle") in real processes
// (sigterm_child): SIGTERM ends the job spans and shuts telemetry down, then acts as the previous
// disposition would have (terminate, run the previous handler, or be ignored); a forked child is
// killed by SIGTERM as if lens were absent; a normal return from main ends the spans through
// atexit.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/spawn_args.hpp"
#include "support/spawn_logged.hpp"
#include "test_directory.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of the child's stdout
};

class ExitHooks : public TestDirectory {
 protected:
  ExitHooks() : TestDirectory("lens-exit-hooks", /*keep_after_failure=*/false) {}

  Child start(const std::string& mode) {
    int pipe_fds[2];
    EXPECT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    std::vector<std::string> env_storage = {
        "MEGATRON_OTEL_ENABLED=1",     "MEGATRON_OTEL_RANK_STRATEGY=all_ranks",
        "MEGATRON_OTEL_EXPORTER=file", "NEMO_LENS_FILE_PATH=" + dir_.string(),
        "NEMO_LENS_RUN_ID=exit-hooks", "OTEL_BSP_SCHEDULE_DELAY=200"};
    // Sanitizer settings pass through; launcher variables would change the rank.
    for (std::string& entry : lens::testing::passed_on_environment(/*with_home=*/false)) {
      env_storage.push_back(std::move(entry));
    }
    const std::vector<char*> envp = lens::testing::null_terminated(env_storage);
    std::string program = LENS_SIGTERM_CHILD_PATH;
    std::vector<char*> argv = {program.data(), const_cast<char*>(mode.c_str()), nullptr};
    // SIGINT as an interactive shell leaves it: the hooks keep an ignored SIGINT ignored.
    const lens::testing::SigintAtDefault attributes;
    Child child;
    EXPECT_EQ(posix_spawn(&child.pid, program.c_str(), &actions, attributes.get(), argv.data(),
                          envp.data()),
              0);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    child.out = pipe_fds[0];
    return child;
  }

  // Reads the child's stdout until `text` has appeared (true) or it closes (false).
  static bool wait_for(const Child& child, const std::string& text, std::string& seen) {
    char buffer[256];
    while (seen.find(text) == std::string::npos) {
      const ssize_t n = read(child.out, buffer, sizeof(buffer));
      if (n <= 0) return false;
      seen.append(buffer, static_cast<std::size_t>(n));
    }
    return true;
  }

  // Starts the child in `mode`, sends it `signal` once it is ready and waits for it: its wait
  // status (-1, neither exited nor signalled, when it never got ready) and what it printed.
  std::pair<int, std::string> terminated(const std::string& mode, int signal = SIGTERM) {
    Child child = start(mode);
    std::string seen;
    if (!wait_for(child, "ready\n", seen)) {
      ADD_FAILURE() << "child never got ready; output: " << seen;
      wait_status(child, seen);
      return {-1, seen};
    }
    kill(child.pid, signal);
    const int status = wait_status(child, seen);
    return {status, seen};
  }

  static bool exited_with(int status, int code) {
    return WIFEXITED(status) && WEXITSTATUS(status) == code;
  }

  // The job span that the child opens at startup reached the file exporter.
  void expect_startup_span_exported() {
    EXPECT_NE(traces().find("\"name\":\"megatron.startup\""), std::string::npos) << traces();
  }

  // Waits for the child with a bound; kills it when the bound passes.
  static int wait_status(Child& child, std::string& seen) {
    int status = 0;
    for (int i = 0; i < 200; ++i) {
      const pid_t done = waitpid(child.pid, &status, WNOHANG);
      if (done == child.pid) {
        wait_for(child, "\x01never", seen);  // drain what is left of stdout
        close(child.out);
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(child.pid, SIGKILL);
    waitpid(child.pid, &status, 0);
    close(child.out);
    ADD_FAILURE() << "child did not end within 10 s; output: " << seen;
    return status;
  }

  std::string traces() const {
    std::ifstream in(dir_ / "traces.jsonl");
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
  }
};

TEST_F(ExitHooks, SigtermExportsTheJobSpansThenTerminates) {
  const auto [status, seen] = terminated("default");
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status << ", output: " << seen;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  expect_startup_span_exported();
}

// The startup span ended by a signal: error status naming it, and the truncation mark.
void expect_interrupted_startup_span(const std::string& traces, const std::string& signal) {
  const auto at = traces.find("\"name\":\"megatron.startup\"");
  ASSERT_NE(at, std::string::npos) << traces;
  const std::string line =
      traces.substr(0, traces.find('\n', at)).substr(traces.rfind('\n', at) + 1);
  EXPECT_NE(line.find("\"status\":{\"message\":\"interrupted by " + signal + "\",\"code\":2}"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("{\"key\":\"nemo.span.truncated\",\"value\":{\"boolValue\":true}}"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("{\"key\":\"nemo.span.truncated.reason\",\"value\":{\"stringValue\":"
                      "\"interrupted by " +
                      signal + "\"}}"),
            std::string::npos)
      << line;
}

TEST_F(ExitHooks, SigtermMarksTheJobSpansInterrupted) {
  const auto [status, seen] = terminated("default");
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status << ", output: " << seen;
  expect_interrupted_startup_span(traces(), "SIGTERM");
}

// SIGINT (Ctrl-C, and what many launchers send first) flushes as SIGTERM does, then the process
// ends by SIGINT as it would without lens.
TEST_F(ExitHooks, SigintExportsTheJobSpansMarkedInterruptedThenTerminates) {
  const auto [status, seen] = terminated("default", SIGINT);
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status << ", output: " << seen;
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  expect_interrupted_startup_span(traces(), "SIGINT");
}

// A SIGINT that was ignored before set_telemetry (a shell's background job) stays ignored: the
// process goes on, telemetry too; SIGTERM still ends both.
TEST_F(ExitHooks, IgnoredSigintStaysIgnored) {
  Child child = start("sigint-ignored");
  std::string seen;
  ASSERT_TRUE(wait_for(child, "ready\n", seen)) << seen;
  kill(child.pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int status = 0;
  EXPECT_EQ(waitpid(child.pid, &status, WNOHANG), 0) << "the child ended on an ignored SIGINT";
  EXPECT_EQ(traces().find("megatron.startup"), std::string::npos) << traces();
  kill(child.pid, SIGTERM);
  status = wait_status(child, seen);
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status << ", output: " << seen;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  expect_interrupted_startup_span(traces(), "SIGTERM");
}

TEST_F(ExitHooks, SigtermStillRunsThePreviousHandler) {
  const auto [status, seen] = terminated("previous-handler");
  ASSERT_TRUE(exited_with(status, 3)) << "status " << status << ", output: " << seen;
  EXPECT_NE(seen.find("previous handler ran\n"), std::string::npos) << seen;
  expect_startup_span_exported();
}

TEST_F(ExitHooks, IgnoredSigtermShutsTelemetryDownAndTheProcessGoesOn) {
  const auto [status, seen] = terminated("ignored");
  ASSERT_TRUE(exited_with(status, 0)) << "status " << status << ", output: " << seen;
  EXPECT_NE(seen.find("alive after shutdown\n"), std::string::npos) << seen;
  expect_startup_span_exported();
}

TEST_F(ExitHooks, ForkedChildDiesBySigtermAndAtexitEndsTheParentsSpans) {
  Child child = start("fork");
  std::string seen;
  const int status = wait_status(child, seen);
  ASSERT_TRUE(exited_with(status, 0)) << "status " << status << ", output: " << seen;
  EXPECT_NE(seen.find("child terminated by SIGTERM\n"), std::string::npos) << seen;
  expect_startup_span_exported();
}

}  // namespace
