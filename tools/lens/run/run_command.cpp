// `lens run`: one command for a whole multi-rank training run on this machine. Starts an OTLP
// collector in this process on free loopback ports, launches N ranks of the program with the
// torchrun-style environment, a shared run id and the collector as OTLP endpoint, streams every
// rank's output prefixed with its rank, shows progress, forwards SIGINT/SIGTERM, and at the end
// stops the collector and runs `lens report` on what it received.
// Exit status: 0 when every rank succeeded and the report was written; the first failing rank's
// status (128 + signal when it was killed); 128 + signal after SIGINT/SIGTERM; 1 when the run
// cannot start or the report of successful ranks cannot be written; 2 on bad flags.
#include <netinet/in.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "collect_server/otlp_receiver.hpp"
#include "collect_server/otlp_sink.hpp"
#include "run/rank_processes.hpp"
#include "run/run_hangs.hpp"
#include "run/run_progress.hpp"

extern char** environ;

namespace lens::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// How long ranks get to end after SIGTERM before SIGKILL.
constexpr std::chrono::seconds kGrace{10};
// How long the output of ranks that all ended is still read: a process a rank started in a
// session of its own (a daemon) may keep the pipe open for ever; `lens run` waits for its ranks,
// not for those.
constexpr std::chrono::seconds kOutputDrain{2};

constexpr const char* kRunUsage =
    "usage: lens run [--nproc-per-node N] [--out DIR] [--keep-collector] [--threshold X]\n"
    "                [--grpc HOST:PORT] [--http HOST:PORT] [--hosts-per-run N]\n"
    "                -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs N ranks of PROGRAM on this machine with an OTLP collector in this process, then\n"
    "writes the run report (lens report) into DIR.\n"
    "\n"
    "options:\n"
    "  --nproc-per-node N  ranks to launch (default 1)\n"
    "  --out DIR           where telemetry, rank logs and the report go (default\n"
    "                      ./lens-runs/RUN_ID)\n"
    "  --keep-collector    after the ranks end, keep receiving until SIGINT/SIGTERM, then\n"
    "                      write the report\n"
    "  --threshold X       the report's straggler threshold (default 0.10, see lens report)\n"
    "  --grpc HOST:PORT    the collector's OTLP/gRPC address (default 127.0.0.1:0, a free port)\n"
    "  --http HOST:PORT    the collector's OTLP/HTTP address (default 127.0.0.1:0; 'off')\n"
    "  --hosts-per-run N   a test aid: present the ranks as N hosts (host.name host0...,\n"
    "                      ranks split evenly, LOCAL_RANK and GROUP_RANK to match; default 1)\n"
    "  --help              show this help\n"
    "\n"
    "Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK=0,\n"
    "MASTER_ADDR=127.0.0.1, MASTER_PORT (free), NEMO_LENS_RUN_ID (yours if set, else\n"
    "generated), OTEL_EXPORTER_OTLP_ENDPOINT and _PROTOCOL=grpc (the collector), and\n"
    "NEMO_LENS_EXPORTER=otlp, MEGATRON_OTEL_EXPORTER=otlp. Unless already set:\n"
    "NEMO_LENS_ENABLED=1, NEMO_LENS_RANK_STRATEGY=all_ranks, NEMO_LENS_SPAN_GROUPS=per_step,\n"
    "NEMO_LENS_LOGS_ENABLED=1, OTEL_BSP_SCHEDULE_DELAY=1000, OTEL_METRIC_EXPORT_INTERVAL=2000.\n"
    "When the ranks report a hang (NEMO_LENS_HANG_TIMEOUT), one line says where each rank is.\n";

int usage_error(const std::string& message) {
  std::cerr << "lens run: " << message << "\n";
  return 2;
}

// A free TCP port on loopback (the rendezvous port of the ranks' process group).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

std::string generated_run_id() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &utc);
  std::random_device device;
  char suffix[8];
  std::snprintf(suffix, sizeof(suffix), "%04x", device() & 0xffffu);
  return std::string("run-") + stamp + "-" + suffix;
}

// The environment of rank `rank`: ours, minus what `lens run` decides, plus that.
// With hosts > 1 (--hosts-per-run), rank `rank` is on fake host rank / (world_size / hosts):
// host.name hostH appended to OTEL_RESOURCE_ATTRIBUTES, LOCAL_RANK, LOCAL_WORLD_SIZE and
// GROUP_RANK as on that host.
std::vector<std::string> rank_environment(int rank, int world_size, int master_port,
                                          const std::string& run_id, const std::string& endpoint,
                                          int hosts = 1) {
  const std::set<std::string> replaced = {
      "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
      "MASTER_PORT", "NEMO_LENS_RUN_ID", "OTEL_EXPORTER_OTLP_ENDPOINT",
      "OTEL_EXPORTER_OTLP_PROTOCOL", "NEMO_LENS_EXPORTER", "MEGATRON_OTEL_EXPORTER",
      "OTEL_RESOURCE_ATTRIBUTES",
      // The collector is ours: per-signal endpoints, protocols and credentials would send the
      // data elsewhere or fail.
      "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
      "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
      "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
      "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
      "OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS"};
  std::vector<std::string> env;
  std::set<std::string> present;
  std::string resource_attributes;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string item = *entry;
    const std::string key = item.substr(0, item.find('='));
    if (key == "OTEL_RESOURCE_ATTRIBUTES") resource_attributes = item.substr(key.size() + 1);
    if (replaced.count(key) != 0) continue;
    present.insert(key);
    env.push_back(item);
  }
  const int per_host = world_size / std::max(1, hosts);
  const int host = hosts > 1 ? rank / per_host : 0;
  if (hosts > 1) {
    resource_attributes += (resource_attributes.empty() ? "" : ",") +
                           std::string("host.name=host") + std::to_string(host);
  }
  if (!resource_attributes.empty())
    env.push_back("OTEL_RESOURCE_ATTRIBUTES=" + resource_attributes);
  const std::vector<std::pair<std::string, std::string>> set = {
      {"RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(world_size)},
      {"LOCAL_RANK", std::to_string(hosts > 1 ? rank % per_host : rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(hosts > 1 ? per_host : world_size)},
      {"GROUP_RANK", std::to_string(host)},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(master_port)},
      {"NEMO_LENS_RUN_ID", run_id},
      {"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint},
      {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
      {"NEMO_LENS_EXPORTER", "otlp"},
      {"MEGATRON_OTEL_EXPORTER", "otlp"}};
  for (const auto& [key, value] : set) env.push_back(key + "=" + value);
  const std::vector<std::pair<std::string, std::string>> defaults = {
      {"NEMO_LENS_ENABLED", "1"},
      {"NEMO_LENS_RANK_STRATEGY", "all_ranks"},
      {"NEMO_LENS_SPAN_GROUPS", "per_step"},
      // Hang reports (HANG_TIMEOUT) are log records: this run shows them while the ranks hang.
      {"NEMO_LENS_LOGS_ENABLED", "1"},
      {"OTEL_BSP_SCHEDULE_DELAY", "1000"},
      {"OTEL_METRIC_EXPORT_INTERVAL", "2000"}};
  for (const auto& [key, value] : defaults) {
    if (present.count(key) == 0) env.push_back(key + "=" + value);
  }
  return env;
}

int terminal_width() {
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

// Rank output and the progress line on one stdout: on a terminal the progress line is the last
// line, erased before each output line and drawn again after it.
class Console {
 public:
  explicit Console(bool tty) : tty_(tty) {}

  void rank_line(int rank, const std::string& text) {
    clear_status();
    std::printf("[rank %d] %s\n", rank, text.c_str());
    draw_status();
  }
  void message(const std::string& text) {
    clear_status();
    std::printf("%s\n", text.c_str());
    draw_status();
  }
  void status(std::string text) {
    if (!tty_) return;
    status_ = std::move(text);
    clear_status();
    draw_status();
  }
  void finish() {
    clear_status();
    status_.clear();
    std::fflush(stdout);
  }

 private:
  void clear_status() {
    if (tty_ && shown_) std::fputs("\r\033[K", stdout);
    shown_ = false;
  }
  void draw_status() {
    if (tty_ && !status_.empty()) {
      std::fputs(status_.c_str(), stdout);
      shown_ = true;
    }
    std::fflush(stdout);
  }

  bool tty_;
  bool shown_ = false;
  std::string status_;
};

// SIGINT, SIGTERM and SIGCHLD read through a signalfd (blocked for normal delivery here; the
// ranks get them unblocked, see rank_processes.cpp). The previous mask comes back on scope exit.
class SignalReader {
 public:
  SignalReader() {
    sigset_t mask;
    sigemptyset(&mask);
    for (int signal : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&mask, signal);
    pthread_sigmask(SIG_BLOCK, &mask, &previous_);
    fd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  }
  ~SignalReader() {
    if (fd_ >= 0) ::close(fd_);
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SignalReader(const SignalReader&) = delete;
  SignalReader& operator=(const SignalReader&) = delete;

  int fd() const { return fd_; }
  // The SIGINT or SIGTERM read since the last call (0 when none; SIGCHLD is only a wake-up).
  int take() {
    int got = 0;
    signalfd_siginfo info{};
    while (fd_ >= 0 && ::read(fd_, &info, sizeof(info)) == sizeof(info)) {
      if (info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM) {
        got = static_cast<int>(info.ssi_signo);
      }
    }
    return got;
  }

 private:
  int fd_ = -1;
  sigset_t previous_{};
};

struct RunOptions {
  int ranks = 1;
  fs::path out;
  bool keep_collector = false;
  std::optional<Endpoint> grpc;
  std::optional<Endpoint> http;
  std::optional<std::string> threshold;  // handed to lens report, which checks it
  int hosts = 1;                         // --hosts-per-run: fake hosts, a test aid
  std::vector<std::string> program;
};

// Parses what comes before "--"; `program` is what follows it.
Result<RunOptions> parse_run_options(const std::vector<std::string>& args, bool& help) {
  std::vector<std::string> before;
  RunOptions options;
  bool separator = false;
  for (const std::string& arg : args) {
    if (separator) {
      options.program.push_back(arg);
    } else if (arg == "--") {
      separator = true;
    } else {
      before.push_back(arg);
    }
  }
  OptionSpec spec;
  spec.with_value = {"--nproc-per-node", "--out",       "--grpc",
                     "--http",           "--threshold", "--hosts-per-run"};
  spec.flags = {"--keep-collector", "--help"};
  Result<ParsedOptions> parsed = parse_options(before, spec, "run");
  if (!parsed.ok()) return parsed.error();
  if (parsed->has("--help")) {
    help = true;
    return options;
  }
  if (!parsed->positional.empty()) {
    return Error("unexpected argument '" + parsed->positional.front() +
                 "'; the program and its arguments go after '--' (lens run [options] -- "
                 "PROGRAM ARGS...)");
  }
  if (options.program.empty()) {
    return Error("no program given; accepted: lens run [options] -- PROGRAM ARGS...");
  }
  if (auto value = parsed->get("--nproc-per-node")) {
    Result<int> n = parse_int_option("--nproc-per-node", *value, 1);
    if (!n.ok()) return n.error();
    options.ranks = *n;
  }
  if (auto value = parsed->get("--hosts-per-run")) {
    Result<int> n = parse_int_option("--hosts-per-run", *value, 1);
    if (!n.ok()) return n.error();
    if (options.ranks % *n != 0) {
      return Error("invalid value for --hosts-per-run: '" + *value +
                   "'; accepted: a divisor of --nproc-per-node (" + std::to_string(options.ranks) +
                   "), so that every host has as many ranks");
    }
    options.hosts = *n;
  }
  if (auto value = parsed->get("--out")) options.out = *value;
  if (auto value = parsed->get("--threshold")) {
    char* end = nullptr;
    const double threshold = std::strtod(value->c_str(), &end);
    if (value->empty() || *end != '\0' || !(threshold > 0.0 && threshold <= 10.0)) {
      return Error("invalid value for --threshold: '" + *value +
                   "'; accepted: a fraction 0 < X <= 10 (0.10 = 10%)");
    }
    options.threshold = *value;
  }
  options.keep_collector = parsed->has("--keep-collector");
  options.grpc = Endpoint{"127.0.0.1", 0};
  options.http = Endpoint{"127.0.0.1", 0};
  for (const char* name : {"--grpc", "--http"}) {
    const auto value = parsed->get(name);
    if (!value) continue;
    std::optional<Endpoint>& target = std::string(name) == "--grpc" ? options.grpc : options.http;
    if (*value == "off" && std::string(name) == "--http") {
      target.reset();
      continue;
    }
    target = parse_endpoint(*value);
    if (!target) {
      return Error("invalid value for " + std::string(name) + ": '" + *value +
                   "'; accepted: HOST:PORT such as 127.0.0.1:4317 (port 0 picks a free port)" +
                   (std::string(name) == "--http" ? " or 'off'" : ""));
    }
  }
  return options;
}

// Checks the output directory and each rank's log file before anything is opened or started (a
// FIFO would block, a device never ends), then creates the logs directory. False, with the
// reason on stderr, when the run cannot write there.
bool prepare_output(const RunOptions& options) {
  for (const fs::path& dir : {options.out, options.out / "logs"}) {
    if (std::string problem = output_directory_problem(dir); !problem.empty()) {
      std::cerr << "lens run: cannot use the output directory: " << problem << "\n";
      return false;
    }
  }
  for (int rank = 0; rank < options.ranks; ++rank) {
    const fs::path log = options.out / "logs" / ("rank" + std::to_string(rank) + ".log");
    if (std::string problem = output_file_problem(log); !problem.empty()) {
      std::cerr << "lens run: cannot write the log of rank " << rank << ": " << problem << "\n";
      return false;
    }
  }
  std::error_code error;
  fs::create_directories(options.out / "logs", error);
  if (error) {
    std::cerr << "lens run: cannot create " << (options.out / "logs").string() << ": "
              << error.message() << "\n";
    return false;
  }
  return true;
}

}  // namespace

int run_command(const std::vector<std::string>& args) {
  bool help = false;
  Result<RunOptions> parsed = parse_run_options(args, help);
  if (help) {
    std::cout << kRunUsage;
    return 0;
  }
  if (!parsed.ok()) return usage_error(parsed.message());
  RunOptions& options = *parsed;

  const char* given_run_id = std::getenv("NEMO_LENS_RUN_ID");
  const std::string run_id =
      given_run_id != nullptr && *given_run_id != '\0' ? given_run_id : generated_run_id();
  if (options.out.empty()) options.out = fs::path("lens-runs") / run_id;
  if (!prepare_output(options)) return 1;

  // Signals are read from here on, so that a Ctrl-C while starting is not lost.
  SignalReader signals;
  Result<std::unique_ptr<OtlpSink>> sink = OtlpSink::open(options.out.string(), 0);
  if (!sink.ok()) {
    std::cerr << "lens run: " << sink.message() << "\n";
    return 1;
  }
  ReceiverOptions receiver_options;
  receiver_options.grpc = options.grpc;
  receiver_options.http = options.http;
  Result<std::unique_ptr<OtlpReceiver>> receiver = OtlpReceiver::start(receiver_options, **sink);
  if (!receiver.ok()) {
    std::cerr << "lens run: cannot start the collector: " << receiver.message()
              << "; choose other addresses with --grpc/--http\n";
    return 1;
  }
  const std::string endpoint = "http://" + (*receiver)->grpc_endpoint()->to_string();
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  Console console(tty);
  console.message("lens run: " + std::to_string(options.ranks) + " rank(s) of " +
                  options.program.front() + ", run id " + run_id + ", collector " + endpoint +
                  ", output " + options.out.string());

  const int master_port = free_port();
  std::vector<RankLaunch> launches;
  for (int rank = 0; rank < options.ranks; ++rank) {
    launches.push_back(
        {options.program,
         rank_environment(rank, options.ranks, master_port, run_id, endpoint, options.hosts),
         options.out / "logs" / ("rank" + std::to_string(rank) + ".log")});
  }
  Result<RankProcesses> started = RankProcesses::start(launches);
  if (!started.ok()) {
    (*receiver)->stop();
    std::cerr << "lens run: " << started.message() << "\n";
    return 1;
  }
  RankProcesses& ranks = *started;

  RunProgress progress(options.out / "traces.jsonl", options.ranks);
  RunHangs hangs(options.out / "logs.jsonl", options.ranks);
  int stop_signal = 0;   // SIGINT/SIGTERM received
  int failed_rank = -1;  // the first rank that failed (not counting our own stop)
  std::optional<Clock::time_point> kill_at;      // SIGKILL deadline after SIGTERM
  std::optional<Clock::time_point> drain_until;  // the last output read once all ranks ended
  auto last_progress = Clock::now();
  const auto sink_line = [&](int rank, const std::string& text) { console.rank_line(rank, text); };
  auto terminate_ranks = [&] {
    if (kill_at) return;
    ranks.signal_all(SIGTERM);
    kill_at = Clock::now() + kGrace;
  };
  while (true) {
    if (ranks.pump(std::chrono::milliseconds(200), signals.fd(), sink_line)) {
      if (const int signal = signals.take(); signal != 0) {
        if (stop_signal != 0) {
          ranks.signal_all(SIGKILL);  // a second Ctrl-C: no more waiting
        } else {
          stop_signal = signal;
          console.message(std::string("lens run: ") + (signal == SIGINT ? "SIGINT" : "SIGTERM") +
                          ": stopping the ranks");
          terminate_ranks();
        }
      }
    }
    ranks.reap();
    for (int rank = 0; rank < static_cast<int>(ranks.size()); ++rank) {
      const std::optional<int> code = ranks.exit_code(rank);
      if (code && *code != 0 && failed_rank < 0 && stop_signal == 0) {
        failed_rank = rank;
        console.message("lens run: rank " + std::to_string(rank) + " failed with exit status " +
                        std::to_string(*code) + "; stopping the other ranks");
        terminate_ranks();
      }
    }
    if (kill_at && Clock::now() > *kill_at) ranks.signal_all(SIGKILL);
    if (Clock::now() - last_progress > std::chrono::milliseconds(500)) {
      last_progress = Clock::now();
      progress.update();
      if (tty) {
        console.status(progress.bar(terminal_width()) + "  [" + std::to_string(ranks.running()) +
                       " of " + std::to_string(ranks.size()) + " ranks running]");
      } else if (std::string line = progress.line_if_changed(); !line.empty()) {
        console.message(line);
      }
      hangs.update();
      if (std::string line = hangs.line_if_due(Clock::now()); !line.empty()) {
        console.message("lens run: " + line);
      }
    }
    bool outputs_done = true;
    for (int rank = 0; rank < static_cast<int>(ranks.size()); ++rank) {
      outputs_done = outputs_done && ranks.output_done(rank);
    }
    if (ranks.running() == 0 && outputs_done) break;
    if (ranks.running() == 0) {
      if (!drain_until) drain_until = Clock::now() + kOutputDrain;
      if (Clock::now() >= *drain_until) {
        for (int rank = 0; rank < static_cast<int>(ranks.size()); ++rank) {
          if (ranks.output_done(rank)) continue;
          ranks.stop_reading(rank, sink_line);
          console.message("lens run: rank " + std::to_string(rank) +
                          " ended but a process it started still holds its output open; no "
                          "longer reading it (" +
                          std::to_string(kOutputDrain.count()) + " s after the last rank ended)");
        }
        break;
      }
    }
  }
  console.finish();

  if (options.keep_collector && stop_signal == 0) {
    std::cout << "lens run: the ranks ended; the collector keeps listening on grpc="
              << (*receiver)->grpc_endpoint()->to_string()
              << ((*receiver)->http_endpoint()
                      ? " http=" + (*receiver)->http_endpoint()->to_string()
                      : std::string())
              << " until SIGINT or SIGTERM" << std::endl;
    while (signals.take() == 0) ::usleep(100 * 1000);
  }
  (*receiver)->stop();
  const SinkStats received = (*sink)->stats();
  std::cout << "lens run: collector received " << received.requests << " requests ("
            << received.bytes << " bytes) in " << options.out.string() << std::endl;

  int status = 0;
  if (failed_rank >= 0) {
    status = *ranks.exit_code(failed_rank);
    std::cerr << "lens run: rank " << failed_rank << " failed with exit status " << status
              << "; its last lines:\n";
    for (const std::string& text : ranks.last_lines(failed_rank)) {
      std::cerr << "  " << text << "\n";
    }
    std::cerr << "  (whole output: " << (options.out / "logs").string() << "/rank" << failed_rank
              << ".log)\n";
  } else if (stop_signal != 0) {
    status = 128 + stop_signal;
  }
  std::vector<std::string> report_args = {options.out.string()};
  if (options.threshold) report_args.insert(report_args.end(), {"--threshold", *options.threshold});
  const int report_status = report_command(report_args);
  if (report_status != 0) {
    std::cerr << "lens run: no report was written (lens report exited with " << report_status
              << ")\n";
    if (status == 0) status = 1;  // the ranks succeeded, the run's result did not
  }
  // The report's path only when this run wrote it (a failed report may leave an older one).
  std::cout << "lens run: "
            << (status == 0 ? "done" : "ended with status " + std::to_string(status))
            << (report_status == 0 ? "; report: " + (options.out / "report.html").string()
                                   : std::string("; no report was written"))
            << std::endl;
  return status;
}

}  // namespace lens::cli
