// Runs a program with a deadline and captures its exit status, stdout and stderr; on the
// deadline the program's process group is killed. The environment is exactly the one given, or
// the test's own. For the tests that run `lens`, its subcommands and chromium.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/spawn_args.hpp"

namespace lens::testing {

struct ProcessResult {
  int exit_code = -1;
  bool timed_out = false;
  std::string out;
  std::string err;
};

inline ProcessResult run_process(
    const std::string& program, const std::vector<std::string>& args,
    const std::optional<std::map<std::string, std::string>>& env = std::nullopt,
    std::chrono::seconds deadline = std::chrono::seconds(60)) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw std::runtime_error("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);  // killable as a group
  posix_spawnattr_setpgroup(&attributes, 0);

  std::vector<std::string> storage{program};
  storage.insert(storage.end(), args.begin(), args.end());
  const std::vector<char*> argv = null_terminated(storage);
  std::vector<std::string> env_storage;
  if (env) {
    for (const auto& [key, value] : *env) env_storage.push_back(key + "=" + value);
  }
  const std::vector<char*> envp = null_terminated(env_storage);
  pid_t pid = 0;
  const int spawn_error = posix_spawnp(&pid, program.c_str(), &actions, &attributes, argv.data(),
                                       env ? envp.data() : environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawn_error != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw std::runtime_error("cannot start " + program);
  }

  ProcessResult result;
  const auto end = std::chrono::steady_clock::now() + deadline;
  std::array<pollfd, 2> fds{pollfd{out_pipe[0], POLLIN, 0}, pollfd{err_pipe[0], POLLIN, 0}};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (poll(fds.data(), fds.size(), static_cast<int>(left.count())) < 0) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buffer[65536];
      const ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      }
    }
  }
  for (auto& fd : fds) {
    if (fd.fd >= 0) close(fd.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  // Helpers the program left behind in its group (chromium's zygotes) go too.
  kill(-pid, SIGKILL);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace lens::testing
