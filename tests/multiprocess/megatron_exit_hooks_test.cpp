// The exit hooks of set_telemetry (SPEC Part 2 §E.8) in real processes (sigterm_child): SIGTERM
// ends the job spans and shuts telemetry down, then acts as the previous disposition would have
// (terminate, run the previous handler, or be ignored); a forked child is killed by SIGTERM as if
// lens were absent; a normal return from main ends the spans through atexit.
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
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of the child's stdout
};

class ExitHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("lens-exit-hooks-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

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
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      // Sanitizer settings pass through; launcher variables would change the rank.
      if (entry.rfind("ASAN_", 0) == 0 || entry.rfind("UBSAN_", 0) == 0 ||
          entry.rfind("TSAN_", 0) == 0 || entry.rfind("LSAN_", 0) == 0 ||
          entry.rfind("PATH=", 0) == 0) {
        env_storage.push_back(entry);
      }
    }
    std::vector<char*> envp;
    for (auto& item : env_storage) envp.push_back(item.data());
    envp.push_back(nullptr);
    std::string program = LENS_SIGTERM_CHILD_PATH;
    std::vector<char*> argv = {program.data(), const_cast<char*>(mode.c_str()), nullptr};
    Child child;
    EXPECT_EQ(posix_spawn(&child.pid, program.c_str(), &actions, nullptr, argv.data(), envp.data()),
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

  fs::path dir_;
};

TEST_F(ExitHooks, SigtermExportsTheJobSpansThenTerminates) {
  Child child = start("default");
  std::string seen;
  ASSERT_TRUE(wait_for(child, "ready\n", seen)) << seen;
  kill(child.pid, SIGTERM);
  const int status = wait_status(child, seen);
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status << ", output: " << seen;
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_NE(traces().find("\"name\":\"megatron.startup\""), std::string::npos) << traces();
}

TEST_F(ExitHooks, SigtermStillRunsThePreviousHandler) {
  Child child = start("previous-handler");
  std::string seen;
  ASSERT_TRUE(wait_for(child, "ready\n", seen)) << seen;
  kill(child.pid, SIGTERM);
  const int status = wait_status(child, seen);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status << ", output: " << seen;
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_NE(seen.find("previous handler ran\n"), std::string::npos) << seen;
  EXPECT_NE(traces().find("\"name\":\"megatron.startup\""), std::string::npos) << traces();
}

TEST_F(ExitHooks, IgnoredSigtermShutsTelemetryDownAndTheProcessGoesOn) {
  Child child = start("ignored");
  std::string seen;
  ASSERT_TRUE(wait_for(child, "ready\n", seen)) << seen;
  kill(child.pid, SIGTERM);
  const int status = wait_status(child, seen);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status << ", output: " << seen;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(seen.find("alive after shutdown\n"), std::string::npos) << seen;
  EXPECT_NE(traces().find("\"name\":\"megatron.startup\""), std::string::npos) << traces();
}

TEST_F(ExitHooks, ForkedChildDiesBySigtermAndAtexitEndsTheParentsSpans) {
  Child child = start("fork");
  std::string seen;
  const int status = wait_status(child, seen);
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status << ", output: " << seen;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(seen.find("child terminated by SIGTERM\n"), std::string::npos) << seen;
  EXPECT_NE(traces().find("\"name\":\"megatron.startup\""), std::string::npos) << traces();
}

}  // namespace
