// Starting a test's child process with posix_spawn: its environment limited to what children get
// (spawn_args.hpp) plus the test's own variables, its stdout and stderr going to one log file.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "support/spawn_args.hpp"

namespace lens::testing {

// posix_spawn attributes that give the child SIGINT at its default disposition, as an interactive
// shell leaves it (a test run in the background of a non-interactive shell inherits it ignored,
// which lens keeps).
class SigintAtDefault {
 public:
  SigintAtDefault() {
    posix_spawnattr_init(&attributes_);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    posix_spawnattr_setsigdefault(&attributes_, &defaults);
    posix_spawnattr_setflags(&attributes_, POSIX_SPAWN_SETSIGDEF);
  }
  ~SigintAtDefault() { posix_spawnattr_destroy(&attributes_); }
  SigintAtDefault(const SigintAtDefault&) = delete;
  SigintAtDefault& operator=(const SigintAtDefault&) = delete;
  const posix_spawnattr_t* get() const { return &attributes_; }

 private:
  posix_spawnattr_t attributes_;
};

// Starts `command` with `env` on top of the sanitizer settings, PATH and HOME, its stdout and
// stderr going to `log`, and SIGINT at its default disposition (SigintAtDefault).
inline pid_t spawn_logged(std::vector<std::string> command,
                          const std::map<std::string, std::string>& env,
                          const std::filesystem::path& log) {
  std::vector<std::string> env_storage = passed_on_environment(/*with_home=*/true);
  for (const auto& [key, value] : env) env_storage.push_back(key + "=" + value);
  const std::vector<char*> envp = null_terminated(env_storage);
  const std::vector<char*> argv = null_terminated(command);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  const SigintAtDefault attributes;
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, argv[0], &actions, attributes.get(), argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

}  // namespace lens::testing
