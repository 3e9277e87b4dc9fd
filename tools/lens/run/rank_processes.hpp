// The rank processes of `lens run`: spawned with their own environment, each in its own process
// group (so that a signal reaches a rank's children too, and the terminal's Ctrl-C reaches only
// `lens run`, which forwards it), stdout and stderr merged into one pipe per rank. Output is read
// line by line: each line goes to a callback, to the rank's log file, and to a short ring of last
// lines for failure messages. Single-threaded: one owner drives pump() and reap().
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lens/result.hpp"

namespace lens::cli {

struct RankLaunch {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::string> env;   // "KEY=VALUE", the whole environment
  std::filesystem::path log;      // the rank's output, as written
};

class RankProcesses {
 public:
  using LineSink = std::function<void(int rank, const std::string& line)>;
  static constexpr std::size_t kLastLines = 20;

  // Starts every rank; when one cannot be started, those already started are killed and the
  // error says which program could not be run and why.
  static Result<RankProcesses> start(const std::vector<RankLaunch>& ranks);

  RankProcesses(RankProcesses&& other) noexcept;
  RankProcesses& operator=(RankProcesses&&) = delete;
  RankProcesses(const RankProcesses&) = delete;
  ~RankProcesses();  // kills and reaps what is still running

  // Waits up to `timeout` for output, `extra_fd` (readable: returns true) or nothing; hands
  // every complete line to `sink`. A rank's last unterminated line is handed over at its EOF.
  bool pump(std::chrono::milliseconds timeout, int extra_fd, const LineSink& sink);

  // Collects the exit status of ranks that ended (non-blocking).
  void reap();

  // Sends `signal` to the process group of every rank still running.
  void signal_all(int signal);

  std::size_t size() const { return ranks_.size(); }
  std::size_t running() const;
  // Exit code (0-255), or 128 + signal number; nullopt while running.
  std::optional<int> exit_code(int rank) const { return ranks_[rank].exit_code; }
  const std::deque<std::string>& last_lines(int rank) const { return ranks_[rank].last; }
  // True once the rank's output pipe reached EOF (all its output was handed over) or was given
  // up with stop_reading().
  bool output_done(int rank) const { return ranks_[rank].fd < 0; }
  // Reads what is in the rank's pipe now, hands its last unterminated line over and closes the
  // pipe: for a rank that ended while a process it started (a daemon in its own session) still
  // holds the pipe open.
  void stop_reading(int rank, const LineSink& sink);

 private:
  struct Rank {
    pid_t pid = -1;
    int fd = -1;  // read end of the output pipe
    std::FILE* log = nullptr;
    std::string partial;
    std::deque<std::string> last;
    std::optional<int> exit_code;
  };

  RankProcesses() = default;
  void line(int rank, std::string text, const LineSink& sink);
  void drain(int rank, const LineSink& sink);

  std::vector<Rank> ranks_;
};

}  // namespace lens::cli
