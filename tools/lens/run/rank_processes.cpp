// Spawning, reading and reaping the ranks of `lens run` (see rank_processes.hpp).
#include "run/rank_processes.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace lens::cli {
namespace {

// Spawns one rank in its own process group with default signal dispositions and an empty
// signal mask (`lens run` blocks the signals it reads through a signalfd; children must not
// inherit that), stdout and stderr on `out_fd`, stdin from /dev/null.
int spawn_rank(const RankLaunch& launch, int out_fd, pid_t* pid) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_fd, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t empty;
  sigemptyset(&empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int signal : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP}) sigaddset(&defaults, signal);
  posix_spawnattr_setsigmask(&attributes, &empty);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> argv_storage = launch.argv;
  std::vector<char*> argv;
  for (auto& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage = launch.env;
  std::vector<char*> envp;
  for (auto& item : env_storage) envp.push_back(item.data());
  envp.push_back(nullptr);
  const int error = posix_spawnp(pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  return error;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

Result<RankProcesses> RankProcesses::start(const std::vector<RankLaunch>& launches) {
  RankProcesses processes;
  processes.ranks_.resize(launches.size());
  for (std::size_t i = 0; i < launches.size(); ++i) {
    Rank& rank = processes.ranks_[i];
    rank.log = std::fopen(launches[i].log.c_str(), "w");
    if (rank.log == nullptr) {
      return Error("cannot write the log of rank " + std::to_string(i) + " to " +
                   launches[i].log.string() + ": " + std::strerror(errno));
    }
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
      return Error(std::string("cannot create a pipe for rank output: ") + std::strerror(errno));
    }
    const int error = spawn_rank(launches[i], pipe_fds[1], &rank.pid);
    ::close(pipe_fds[1]);
    if (error != 0) {
      ::close(pipe_fds[0]);
      rank.pid = -1;
      return Error("cannot start '" + launches[i].argv[0] + "' for rank " + std::to_string(i) +
                   ": " + std::strerror(error));
    }
    fcntl(pipe_fds[0], F_SETFL, fcntl(pipe_fds[0], F_GETFL) | O_NONBLOCK);
    rank.fd = pipe_fds[0];
  }
  return processes;
}

RankProcesses::RankProcesses(RankProcesses&& other) noexcept : ranks_(std::move(other.ranks_)) {
  other.ranks_.clear();
}

RankProcesses::~RankProcesses() {
  for (Rank& rank : ranks_) {
    // Every group, ended or not: no process a rank left behind outlives the run.
    if (rank.pid > 0) ::kill(-rank.pid, SIGKILL);
  }
  for (Rank& rank : ranks_) {
    if (rank.pid > 0 && !rank.exit_code) {
      int status = 0;
      waitpid(rank.pid, &status, 0);
    }
    if (rank.fd >= 0) ::close(rank.fd);
    if (rank.log != nullptr) std::fclose(rank.log);
  }
}

void RankProcesses::line(int rank, std::string text, const LineSink& sink) {
  Rank& r = ranks_[rank];
  if (r.log != nullptr) {
    std::fwrite(text.data(), 1, text.size(), r.log);
    std::fputc('\n', r.log);
    std::fflush(r.log);
  }
  sink(rank, text);
  r.last.push_back(std::move(text));
  if (r.last.size() > kLastLines) r.last.pop_front();
}

void RankProcesses::drain(int rank, const LineSink& sink) {
  Rank& r = ranks_[rank];
  char buffer[8192];
  while (r.fd >= 0) {
    const ssize_t n = ::read(r.fd, buffer, sizeof(buffer));
    if (n > 0) {
      r.partial.append(buffer, static_cast<std::size_t>(n));
      for (std::size_t newline; (newline = r.partial.find('\n')) != std::string::npos;) {
        std::string text = r.partial.substr(0, newline);
        r.partial.erase(0, newline + 1);
        line(rank, std::move(text), sink);
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    // EOF (or an error): the rank closed its output.
    if (!r.partial.empty()) line(rank, std::exchange(r.partial, {}), sink);
    ::close(r.fd);
    r.fd = -1;
  }
}

void RankProcesses::stop_reading(int rank, const LineSink& sink) {
  drain(rank, sink);
  Rank& r = ranks_[rank];
  if (r.fd < 0) return;
  if (!r.partial.empty()) line(rank, std::exchange(r.partial, {}), sink);
  ::close(r.fd);
  r.fd = -1;
}

bool RankProcesses::pump(std::chrono::milliseconds timeout, int extra_fd, const LineSink& sink) {
  std::vector<pollfd> fds;
  std::vector<int> owners;
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    if (ranks_[i].fd >= 0) {
      fds.push_back({ranks_[i].fd, POLLIN, 0});
      owners.push_back(static_cast<int>(i));
    }
  }
  if (extra_fd >= 0) fds.push_back({extra_fd, POLLIN, 0});
  if (fds.empty()) {
    std::this_thread::sleep_for(timeout);
    return false;
  }
  const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  if (ready <= 0) return false;
  for (std::size_t i = 0; i < owners.size(); ++i) {
    if (fds[i].revents != 0) drain(owners[i], sink);
  }
  return extra_fd >= 0 && fds.back().revents != 0;
}

void RankProcesses::reap() {
  for (Rank& rank : ranks_) {
    if (rank.pid <= 0 || rank.exit_code) continue;
    int status = 0;
    if (waitpid(rank.pid, &status, WNOHANG) == rank.pid) rank.exit_code = decode_status(status);
  }
}

void RankProcesses::signal_all(int signal) {
  for (Rank& rank : ranks_) {
    if (rank.pid > 0 && !rank.exit_code) {
      // The whole group: the rank's own children (data loaders, launchers) too.
      if (::kill(-rank.pid, signal) != 0) ::kill(rank.pid, signal);
    }
  }
}

std::size_t RankProcesses::running() const {
  std::size_t count = 0;
  for (const Rank& rank : ranks_) {
    if (rank.pid > 0 && !rank.exit_code) ++count;
  }
  return count;
}

}  // namespace lens::cli
