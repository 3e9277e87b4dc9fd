// A trainer-shaped process for megatron_exit_hooks_test: sets telemetry up with the exit hooks
// (exporter=file, directory from the environment), opens the startup job span, prints "ready" and
// waits for the test's SIGTERM. argv[1] says what SIGTERM did before set_telemetry:
//   default           nothing installed: the process must end by SIGTERM after the export
//   previous-handler  a handler that prints and exits 3: it must still run
//   ignored           SIG_IGN: the process must keep running (it exits 0 once the span is out)
//   sigint-ignored    SIGINT is SIG_IGN: a SIGINT must change nothing (the test then sends SIGTERM)
//   fork              the process forks a child that pauses, sends it SIGTERM (the child must die
//                     by it: telemetry is not the child's) and then returns from main, so that the
//                     atexit hook ends the job spans
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "lens/megatron/telemetry.hpp"
#include "lens/megatron/training_args.hpp"

namespace {

void previous_handler(int) {
  const char text[] = "previous handler ran\n";
  (void)!write(STDOUT_FILENO, text, sizeof(text) - 1);
  _exit(3);
}

bool file_has_data(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && info.st_size > 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "default";
  if (mode == "previous-handler") signal(SIGTERM, previous_handler);
  if (mode == "ignored") signal(SIGTERM, SIG_IGN);
  if (mode == "sigint-ignored") signal(SIGINT, SIG_IGN);

  auto rank = lens::RankInfo::make(0, 1);
  auto args = lens::megatron::parse_training_args({});
  if (!rank.ok() || !args.ok()) return 10;
  if (lens::Status status = lens::megatron::set_telemetry(*args, *rank); !status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 11;
  }
  auto handle = lens::megatron::get_telemetry();
  if (!handle || !handle->is_exporting()) return 12;
  lens::megatron::set_job_span(lens::megatron::JobSpan::startup,
                               lens::start_span("megatron.startup"));

  if (mode == "fork") {
    const pid_t child = fork();
    if (child == 0) {
      pause();
      _exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(child, SIGTERM);
    int status = 0;
    waitpid(child, &status, 0);
    std::printf("child %s\n", WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM
                                  ? "terminated by SIGTERM"
                                  : "did not end by SIGTERM");
    return 0;  // atexit ends the job spans
  }

  std::printf("ready\n");
  std::fflush(stdout);
  const std::string traces = std::string(std::getenv("NEMO_LENS_FILE_PATH")) + "/traces.jsonl";
  for (int i = 0; i < 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (mode == "ignored" && file_has_data(traces)) {
      std::printf("alive after shutdown\n");
      return 0;
    }
  }
  std::printf("no SIGTERM arrived\n");
  return 13;
}
