// `lens run` while its ranks run (see rank_supervisor.hpp).
#include "run/rank_supervisor.hpp"

#include <signal.h>

#include <chrono>
#include <optional>
#include <string>

#include "run/run_hangs.hpp"
#include "run/run_progress.hpp"

namespace lens::cli {
namespace {

using Clock = std::chrono::steady_clock;

// How long ranks get to end after SIGTERM before SIGKILL.
constexpr std::chrono::seconds kGrace{10};
// How long the output of ranks that all ended is still read: a process a rank started in a
// session of its own (a daemon) may keep the pipe open for ever; `lens run` waits for its ranks,
// not for those.
constexpr std::chrono::seconds kOutputDrain{2};

class RankSupervisor {
 public:
  RankSupervisor(RankProcesses& ranks, SignalReader& signals, Console& console,
                 const std::filesystem::path& out)
      : ranks_(ranks),
        signals_(signals),
        console_(console),
        progress_(out / "traces.jsonl", static_cast<int>(ranks.size())),
        hangs_(out / "logs.jsonl", static_cast<int>(ranks.size())),
        sink_line_([this](int rank, const std::string& text) { console_.rank_line(rank, text); }) {}

  RanksEnd run() {
    while (true) {
      if (ranks_.pump(std::chrono::milliseconds(200), signals_.fd(), sink_line_)) take_signal();
      ranks_.reap();
      stop_after_failure();
      if (kill_at_ && Clock::now() > *kill_at_) ranks_.signal_all(SIGKILL);
      if (Clock::now() - last_progress_ > std::chrono::milliseconds(500)) show_progress();
      if (finished()) break;
    }
    return end_;
  }

 private:
  void terminate_ranks() {
    if (kill_at_) return;
    ranks_.signal_all(SIGTERM);
    kill_at_ = Clock::now() + kGrace;
  }

  void take_signal() {
    const int signal = signals_.take();
    if (signal == 0) return;
    if (end_.stop_signal != 0) {
      ranks_.signal_all(SIGKILL);  // a second Ctrl-C: no more waiting
      return;
    }
    end_.stop_signal = signal;
    console_.message(std::string("lens run: ") + (signal == SIGINT ? "SIGINT" : "SIGTERM") +
                     ": stopping the ranks");
    terminate_ranks();
  }

  void stop_after_failure() {
    for (int rank = 0; rank < static_cast<int>(ranks_.size()); ++rank) {
      const std::optional<int> code = ranks_.exit_code(rank);
      if (code && *code != 0 && end_.failed_rank < 0 && end_.stop_signal == 0) {
        end_.failed_rank = rank;
        console_.message("lens run: rank " + std::to_string(rank) + " failed with exit status " +
                         std::to_string(*code) + "; stopping the other ranks");
        terminate_ranks();
      }
    }
  }

  void show_progress() {
    last_progress_ = Clock::now();
    progress_.update();
    if (console_.tty()) {
      console_.status(progress_.bar(terminal_width()) + "  [" + std::to_string(ranks_.running()) +
                      " of " + std::to_string(ranks_.size()) + " ranks running]");
    } else if (std::string line = progress_.line_if_changed(); !line.empty()) {
      console_.message(line);
    }
    hangs_.update();
    if (std::string line = hangs_.line_if_due(Clock::now()); !line.empty()) {
      console_.message("lens run: " + line);
    }
  }

  // True once every rank ended and its output was read, or the drain time after the last rank
  // ended is over (the outputs still open are then given up).
  bool finished() {
    bool outputs_done = true;
    for (int rank = 0; rank < static_cast<int>(ranks_.size()); ++rank) {
      outputs_done = outputs_done && ranks_.output_done(rank);
    }
    if (ranks_.running() != 0) return false;
    if (outputs_done) return true;
    if (!drain_until_) drain_until_ = Clock::now() + kOutputDrain;
    if (Clock::now() < *drain_until_) return false;
    for (int rank = 0; rank < static_cast<int>(ranks_.size()); ++rank) {
      if (ranks_.output_done(rank)) continue;
      ranks_.stop_reading(rank, sink_line_);
      console_.message("lens run: rank " + std::to_string(rank) +
                       " ended but a process it started still holds its output open; no "
                       "longer reading it (" +
                       std::to_string(kOutputDrain.count()) + " s after the last rank ended)");
    }
    return true;
  }

  RankProcesses& ranks_;
  SignalReader& signals_;
  Console& console_;
  RunProgress progress_;
  RunHangs hangs_;
  const RankProcesses::LineSink sink_line_;
  RanksEnd end_;
  std::optional<Clock::time_point> kill_at_;      // SIGKILL deadline after SIGTERM
  std::optional<Clock::time_point> drain_until_;  // the last output read once all ranks ended
  Clock::time_point last_progress_ = Clock::now();
};

}  // namespace

RanksEnd supervise_ranks(RankProcesses& ranks, SignalReader& signals, Console& console,
                         const std::filesystem::path& out) {
  return RankSupervisor(ranks, signals, console, out).run();
}

}  // namespace lens::cli
