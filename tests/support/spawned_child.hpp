// A test's child process that runs while the test goes on: started with posix_spawn (its
// environment limited to what children get, spawn_args.hpp, plus the test's own variables), its
// stdout and stderr into two files, waited for with a bound, killed if the test ends first. For
// the tests that drive `lens run` / `lens report` and signal or watch them while they run.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/spawn_args.hpp"

namespace lens::testing {

// The whole content of a file ("" when it cannot be read).
inline std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

// `head` followed by `tail`: a program and its fixed arguments, then a test's own.
inline std::vector<std::string> joined(std::vector<std::string> head,
                                       const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

class SpawnedChild {
 public:
  SpawnedChild(const std::vector<std::string>& command, std::filesystem::path out,
               std::filesystem::path err, const std::map<std::string, std::string>& env = {})
      : out_(std::move(out)), err_(std::move(err)) {
    std::vector<std::string> env_storage = passed_on_environment(/*with_home=*/true);
    for (const auto& [key, value] : env) env_storage.push_back(key + "=" + value);
    const std::vector<char*> envp = null_terminated(env_storage);
    std::vector<std::string> argv_storage = command;
    const std::vector<char*> argv = null_terminated(argv_storage);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_EQ(posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
  }
  ~SpawnedChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  SpawnedChild(const SpawnedChild&) = delete;
  SpawnedChild& operator=(const SpawnedChild&) = delete;

  // The exit code (128 + signal when killed); -1 after `limit` (the process is then killed).
  int wait(std::chrono::seconds limit = std::chrono::seconds(180)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Waits (bounded) until stdout contains `text`.
  bool wait_for_output(const std::string& text,
                       std::chrono::seconds limit = std::chrono::seconds(60)) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (out().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  void signal(int number) const { ::kill(pid_, number); }
  pid_t pid() const { return pid_; }
  std::string out() const { return file_text(out_); }
  std::string err() const { return file_text(err_); }

 private:
  std::filesystem::path out_;
  std::filesystem::path err_;
  pid_t pid_ = -1;
};

}  // namespace lens::testing
