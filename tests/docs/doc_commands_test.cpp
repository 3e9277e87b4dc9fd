// The docs' shell commands, as the doc-snippet test does for their C++ blocks: every ```sh and
// ```bash block of README.md and docs/**/*.md, every ```python block (run by /usr/bin/python3 on
// the build tree's nemo.lens), every usage block starting `build/bin/lens`, and
// every transcript block (lines `$ command` followed by what it prints) is named in kBlocks, which
// says how this test runs it or why it cannot run here; a block missing from the table, or an entry
// whose block is gone, fails. Every block, run or not, is also checked against the built tree:
// commands are `build/bin/...` (never a bare `lens`, which nothing puts on PATH), the
// executables exist, each `--flag` of `build/bin/lens <command>` and of
// `build/bin/simple_train_loop` is in that command's --help, each MEGATRON_OTEL_/NEMO_LENS_/OTEL_
// variable set is in docs/configuration.md, each repository path exists, and torchrun and mpirun
// lines carry what Debian's launchers need (docs/megatron.md#launchers-on-this-machine). Blocks run
// in a scratch directory where `build` is this build tree, with HOME and TMPDIR inside it, and the
// ports 4317 and 4318 replaced by free ones, in the text and as `lens collect`'s defaults (so that
// parallel runs do not collide), as is MASTER_PORT=29500; each in a process group of its own,
// killed at the end. Single-threaded.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kSource = LENS_SOURCE_DIR;
const fs::path kBuild = LENS_BUILD_DIR;

enum class Mode {
  kRun,         // run as written; exit 0, and every background job still serving, then stopped
  kEnv,         // run, then `build/bin/lens config --prefix MEGATRON_OTEL` accepts the result
  kTranscript,  // each `$ command` runs and prints exactly the lines that follow it
  kNotRun,      // checked, not run: `why` says what it needs that a test cannot have here
};

struct Entry {
  const char* file;
  const char* first_line;  // the block's first line, as written
  Mode mode;
  const char* why = "";     // kNotRun: what it needs that this test cannot have
  bool check_paths = true;  // false: the block names files of another build or machine
  const char* before = "";  // kRun: what the block expects to be running already
  const char* expect = "";  // kRun: a line its output must have (what the block is for)
  const char* env = "";     // kRun of a ```python block: variables it runs with (as documented)
};

// Every command block of the docs. Keep it in the docs' order.
const std::vector<Entry> kBlocks = {
    {"README.md",
     "scripts/demo.sh     # installs the Debian packages, builds, and runs the main job",
     Mode::kNotRun, "installs packages and builds everything: minutes, as root"},
    {"README.md", "export PYTHONPATH=$PWD/build/python", Mode::kNotRun,
     "the Python examples: tests/python runs them (pytest)"},
    {"README.md",
     "MEGATRON_OTEL_ENABLED=1 MEGATRON_OTEL_EXPORTER=console build/bin/simple_train_loop",
     Mode::kRun, "", true, "", "training done: 50 iterations"},
    {"README.md", "build/bin/lens config [--prefix P] [--fallback-prefix F]", Mode::kNotRun,
     "usage synopsis (its flags are checked)"},
    {"README.md", "$ NEMO_LENS_SPAN_GROUPS=default,bogus build/bin/lens config", Mode::kTranscript},
    {"README.md",
     "PYTHONPATH=$PWD/build/python NEMO_LENS_ENABLED=1 NEMO_LENS_EXPORTER=console /usr/bin/python3 "
     "-c '",
     Mode::kRun, "", true, "", "\"name\":\"hello\""},
    {"README.md", "pip wheel --no-build-isolation .", Mode::kNotRun,
     "builds liblens inside pip (minutes) and installs into a venv: python.wheel (ctest -L wheel) "
     "runs both"},
    {"README.md",
     "scripts/build.sh                                          # build/ ; binaries in build/bin/",
     Mode::kNotRun, "builds the project: minutes"},
    {"docs/backends.md",
     "export MEGATRON_OTEL_ENABLED=1                 # or NEMO_LENS_ENABLED=1 outside the trainer",
     Mode::kEnv},
    {"docs/collect.md",
     "build/bin/lens collect [--grpc HOST:PORT|off] [--http HOST:PORT|off] [--out DIR]",
     Mode::kNotRun, "usage synopsis (its flags are checked)"},
    {"docs/collect.md",
     "build/bin/lens collect --grpc 127.0.0.1:4317 --http off --out ./telemetry &", Mode::kRun, "",
     true, "", "{\"name\":\"megatron.train_step\",\"ms\":"},
    {"docs/collect.md", "(umask 077; openssl rand -hex 16 > ~/.lens-token)", Mode::kEnv},
    {"docs/collect.md", "tmp=$(mktemp -d)", Mode::kRun},
    {"docs/collect.md", "echo '{\"resourceSpans\": []}' > request.json", Mode::kRun, "", true,
     "build/bin/lens collect --grpc off --http 127.0.0.1:4318 --out ./collected &"},
    {"docs/collect.md",
     "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \\", Mode::kEnv},
    {"docs/configuration.md", "export MEGATRON_OTEL_ENABLED=1", Mode::kEnv},
    {"docs/configuration.md", "export MEGATRON_OTEL_ENABLED=1", Mode::kRun},
    {"docs/configuration.md", "export MEGATRON_OTEL_ENABLED=1", Mode::kEnv},
    {"docs/development.md",
     "git clone -q . /tmp/lens-ci && cd /tmp/lens-ci && time CI=true bash .ci/run < /dev/null",
     Mode::kNotRun, "the whole CI run: about 35 minutes"},
    {"docs/development.md",
     "awk 'NR > 1 { print ($2 - $1) / 1000, $4 }' /tmp/lens-ci/build-asan/.ninja_log | sort -rn | "
     "head -20",
     Mode::kNotRun, "reads the CI run of the block above"},
    {"docs/exporters.md", "export OTEL_EXPORTER_OTLP_ENDPOINT=https://collector.internal:4317",
     Mode::kNotRun, "names a deployment's certificate files (/etc/ssl/lens)"},
    {"docs/exporters.md",
     "export OTEL_EXPORTER_OTLP_ENDPOINT=http://collector.internal:4317                 # gRPC",
     Mode::kEnv},
    {"docs/exporters.md", "export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://jaeger:4317",
     Mode::kEnv},
    {"docs/exporters.md", "export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://tempo-distributor:4317",
     Mode::kEnv},
    {"docs/megatron.md", "# one process, spans printed as JSON lines", Mode::kNotRun,
     "five trainer processes of 50 iterations (~1 min on 2 cores): TrainLoop.* run the 4-rank "
     "layout"},
    {"docs/megatron.md",
     "# two processes under Open MPI (ranks from OMPI_COMM_WORLD_*), exporting to lens collect",
     Mode::kRun, "", true, "", "training done: 50 iterations"},
    {"docs/megatron.md",
     "build/bin/lens run --nproc-per-node 4 -- build/bin/simple_train_loop --train-iters 60",
     Mode::kNotRun, "the demo's run (~1 min): scripts/demo.sh, LensRun.* run lens run"},
    {"docs/megatron.md",
     "# 1. Local development with the console exporter: spans and metrics as JSON lines on stdout.",
     Mode::kNotRun,
     "six trainer runs, one of 200 iterations (15-25 s on 2 cores): TrainLoop.Seed* run each "
     "configuration; its launch lines are checked"},
    {"docs/python.md", "import os", Mode::kRun, "", true, "", "\"name\":\"train_step\"",
     "NEMO_LENS_ENABLED=1 NEMO_LENS_SPAN_GROUPS=per_step NEMO_LENS_EXPORTER=console"},
    {"docs/python.md", "export PYTHONPATH=$PWD/build/python", Mode::kNotRun,
     "the Python examples: tests/python runs them (pytest)"},
    {"docs/reliability.md", "scripts/fuzz.sh                      # every target, 60 s each",
     Mode::kNotRun, "libFuzzer runs of minutes, in a Clang build"},
    {"docs/reliability.md", "ctest --test-dir build -R '^fuzz\\.'", Mode::kNotRun,
     "the fuzz corpora: ctest runs them (fuzz.*); the second line needs a fuzz build", false},
    {"docs/reliability.md",
     "LENS_FUZZ_JOBS=1 nice -n 19 scripts/fuzz.sh -t 60 --merge               # 15:07 UTC, all "
     "targets",
     Mode::kNotRun, "libFuzzer runs of minutes, in a Clang build"},
    {"docs/reliability.md", "cmake -S . -B build-fault -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo",
     Mode::kNotRun, "a build of its own: minutes"},
    {"docs/report.md", "build/bin/lens report ./lens-otlp", Mode::kNotRun,
     "needs a run's telemetry in ./lens-otlp (LensReportCommand.* reports real runs)"},
    {"docs/report.md",
     "build/bin/lens report DIR [-o report.html] [--perfetto trace.json] [--perfetto-all-ranks]",
     Mode::kNotRun, "usage synopsis (its flags are checked)"},
    {"docs/report.md", "$ build/bin/lens report /no/such/run", Mode::kTranscript},
    {"docs/report.md", "build/bin/lens report DIR_A DIR_B [...] [-o compare.html] [--run-id ID]",
     Mode::kNotRun, "usage synopsis (its flags are checked)"},
    {"docs/report.md", "$ build/bin/lens report ./run-a ./run-b", Mode::kNotRun,
     "needs two runs' telemetry (LensReportCompare.* compares real runs)"},
    {"docs/report.md", "$ build/bin/lens report ./run-a ./run-b --window 10", Mode::kTranscript},
    {"docs/report.md", "build/bin/lens report --job DIR [DIR...] [-o job.html]", Mode::kNotRun,
     "usage synopsis (its flags are checked)"},
    {"docs/report.md",
     "$ SLURM_JOB_ID=4242 build/bin/lens run --nproc-per-node 2 --out run1 -- "
     "build/bin/simple_train_loop --train-iters 60 --eval-iters 4 --eval-interval 10 "
     "--save-interval 16 --save ckpt --load ckpt --slow-ranks 1 --slow-ms 60 --crash-at 37",
     Mode::kNotRun,
     "three runs of one job with a kill -9 between (~10 s): JobLedgerRun.* runs them"},
    {"docs/report.md", "$ build/bin/lens report --job ./run-a ./run-b --window 10",
     Mode::kTranscript},
    {"docs/run.md",
     "build/bin/lens run [--nproc-per-node N] [--out DIR] [--keep-collector] [--threshold X] \\",
     Mode::kNotRun, "usage synopsis (its flags are checked)"},
    {"docs/run.md",
     "build/bin/lens run --nproc-per-node 4 -- build/bin/simple_train_loop --train-iters 60 \\",
     Mode::kNotRun, "a 4-rank run of 60 iterations with its output (~1 min): LensRun.* run it"},
    {"docs/security.md", "scripts/build.sh build", Mode::kNotRun,
     "builds and runs test suites: minutes (ctest runs those tests)", false},
};

struct Block {
  std::string file;
  int line = 0;  // of the opening fence
  std::string lang;
  std::vector<std::string> lines;
  std::string where() const { return file + ":" + std::to_string(line); }
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<fs::path> doc_files() {
  std::vector<fs::path> docs = {kSource / "README.md"};
  std::vector<fs::path> more;
  for (const auto& entry : fs::recursive_directory_iterator(kSource / "docs")) {
    if (entry.path().extension() == ".md") more.push_back(entry.path());
  }
  std::sort(more.begin(), more.end());
  docs.insert(docs.end(), more.begin(), more.end());
  return docs;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// The command blocks: shell blocks, usage blocks of the lens command, and transcripts.
std::vector<Block> command_blocks() {
  std::vector<Block> blocks;
  for (const fs::path& path : doc_files()) {
    std::istringstream in(read_file(path));
    const std::string file = fs::relative(path, kSource).string();
    std::string line;
    int number = 0;
    std::optional<Block> open;
    while (std::getline(in, line)) {
      ++number;
      if (!starts_with(line, "```")) {
        if (open) open->lines.push_back(line);
        continue;
      }
      if (open) {
        const Block& b = *open;
        const bool shell = b.lang == "sh" || b.lang == "bash" || b.lang == "python";
        const bool plain = b.lang.empty() && !b.lines.empty() &&
                           (starts_with(b.lines[0], "$ ") || starts_with(b.lines[0], "build/bin/"));
        if (shell || plain) blocks.push_back(b);
        open.reset();
      } else {
        open = Block{file, number, line.substr(3), {}};
      }
    }
  }
  return blocks;
}

// Logical command lines: continuation lines joined, comment lines and trailing comments out.
std::vector<std::string> logical_lines(const Block& block) {
  std::vector<std::string> out;
  std::string current;
  // In a transcript, the commands are the `$ ` lines; the others are what they print.
  const bool transcript = std::any_of(block.lines.begin(), block.lines.end(),
                                      [](const std::string& l) { return starts_with(l, "$ "); });
  for (std::string line : block.lines) {
    if (transcript && !starts_with(line, "$ ")) continue;
    if (starts_with(line, "$ ")) line = line.substr(2);
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    // A comment: " #" outside quotes (the docs' blocks have no '#' inside their quotes).
    if (auto hash = line.find("  #"); hash != std::string::npos) line = line.substr(0, hash);
    if (auto hash = line.find(" # "); hash != std::string::npos) line = line.substr(0, hash);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (!line.empty() && line.back() == '\\') {
      current += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    out.push_back(current + line);
    current.clear();
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

struct Output {
  int status = -1;
  std::string text;
};

// Runs `script` with bash in `dir` (HOME and TMPDIR there too), stdout and stderr together, in
// a process group of its own: at the end, or after `timeout` seconds, the whole group is killed,
// so that nothing the script left in the background (a collector) outlives it.
Output run_bash(const std::string& script, const fs::path& dir, int timeout = 60) {
  const fs::path file = dir / ".doc-block.sh";
  const fs::path output = dir / ".doc-block.out";
  std::ofstream(file) << script;
  Output out;
  const pid_t pid = fork();
  if (pid < 0) return out;
  if (pid == 0) {
    setpgid(0, 0);
    const int fd = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || chdir(dir.c_str()) != 0) _exit(127);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    setenv("HOME", dir.c_str(), 1);
    setenv("TMPDIR", dir.c_str(), 1);
    execl("/bin/bash", "bash", file.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // (also in the parent: no race with the kill below)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      out.text = "(killed after " + std::to_string(timeout) + " s)\n";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(-pid, SIGKILL);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  out.text = read_file(output) + out.text;
  return out;
}

// What `build/bin/<program> [command] --help` prints, once per command.
const std::string& help_of(const std::string& program, const std::string& command) {
  static std::map<std::string, std::string> cache;
  const std::string key = program + " " + command;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const std::string invocation =
      "'" + (kBuild / "bin" / program).string() + "' " + command + " --help";
  const fs::path dir =
      fs::temp_directory_path() / ("lens-doc-commands-" + std::to_string(getpid()) + "-help");
  fs::create_directories(dir);
  std::string& help = cache[key] = run_bash(invocation, dir, 30).text;
  fs::remove_all(dir);
  return help;
}

// A free TCP port on loopback (the kernel's choice; a race with another process is possible
// but short).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// A scratch directory whose `build` is this build tree (links to its entries), except that
// build/bin/lens gives `lens collect` the ports LENS_DOC_GRPC_PORT and LENS_DOC_HTTP_PORT in
// place of its defaults 4317 and 4318 (which the block's text has replaced in the same way).
fs::path scratch_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("lens-doc-commands-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir / "build" / "bin");
  for (const auto& entry : fs::directory_iterator(kBuild)) {
    if (entry.path().filename() != "bin") {
      fs::create_symlink(entry.path(), dir / "build" / entry.path().filename());
    }
  }
  for (const auto& entry : fs::directory_iterator(kBuild / "bin")) {
    if (entry.path().filename() != "lens") {
      fs::create_symlink(entry.path(), dir / "build" / "bin" / entry.path().filename());
    }
  }
  const fs::path wrapper = dir / "build" / "bin" / "lens";
  std::ofstream(wrapper)
      << "#!/bin/bash\n"
         "if [ \"$1\" = collect ] && [ -n \"$LENS_DOC_GRPC_PORT\" ]; then\n"
         "  grpc=1 http=1\n"
         "  for a in \"$@\"; do case \"$a\" in\n"
         "    --grpc|--grpc=*) grpc=0 ;; --http|--http=*) http=0 ;;\n"
         "  esac; done\n"
         "  [ $grpc = 1 ] && set -- \"$@\" --grpc 127.0.0.1:$LENS_DOC_GRPC_PORT\n"
         "  [ $http = 1 ] && set -- \"$@\" --http 127.0.0.1:$LENS_DOC_HTTP_PORT\n"
         "fi\n"
         "exec '"
      << (kBuild / "bin" / "lens").string() << "' \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all, fs::perm_options::add);
  return dir;
}

// The static checks of one block; each problem names the block.
std::vector<std::string> check_block(const Block& block, const Entry& entry) {
  std::vector<std::string> problems;
  if (block.lang == "python") return problems;  // Python: it runs, or it is not checked
  const std::string reference =
      read_file(kSource / "docs" / "configuration.md") + read_file(kSource / "docs" / "collect.md");
  const std::regex variable(R"(^([A-Z][A-Z0-9_]*)=)");
  for (const std::string& line : logical_lines(block)) {
    // Each simple command of the line: split at the shell's separators.
    const std::vector<std::string> all = words(line);
    std::vector<std::vector<std::string>> commands(1);
    for (const std::string& w : all) {
      if (w == "|" || w == "&&" || w == "||" || w == ";" || w == "&" || w == "do" || w == "then") {
        commands.emplace_back();
      } else {
        commands.back().push_back(w);
      }
    }
    for (const auto& command : commands) {
      size_t i = 0;
      if (i < command.size() && command[i] == "export") ++i;
      for (std::smatch m; i < command.size() && std::regex_search(command[i], m, variable); ++i) {
        const std::string name = m[1];
        for (const char* prefix : {"MEGATRON_OTEL_", "NEMO_LENS_", "OTEL_"}) {
          if (!starts_with(name, prefix)) continue;
          std::string general = name;
          for (const char* signal : {"_TRACES_", "_METRICS_", "_LOGS_"}) {
            if (starts_with(general, "OTEL_EXPORTER_OTLP")) {
              general = replace_all(general, signal, "_");
            }
          }
          const std::string p_form = std::string(prefix) == "OTEL_"
                                         ? name
                                         : "P_" + name.substr(std::string(prefix).size());
          if (reference.find(name) == std::string::npos &&
              reference.find(general) == std::string::npos &&
              reference.find(p_form) == std::string::npos) {
            problems.push_back(name + " is not in docs/configuration.md");
          }
        }
        if (starts_with(name, "LENS_COLLECT") && reference.find(name) == std::string::npos) {
          problems.push_back(name + " is not documented");
        }
      }
      if (i >= command.size()) continue;
      const std::string& program = command[i];
      if (program == "lens") {
        problems.push_back("a bare `lens` (nothing puts it on PATH): write build/bin/lens");
      }
      if (program == "torchrun") {
        for (const char* needed : {"--nproc_per_node", "-r 1 -t 1 --log_dir", "--no_python"}) {
          if (line.find(needed) == std::string::npos) {
            problems.push_back("torchrun without " + std::string(needed) +
                               " (Debian's torchrun needs it)");
          }
        }
      }
      if (program == "kill" && command.size() > i + 1 && starts_with(command[i + 1], "%")) {
        problems.push_back("kill " + command[i + 1] +
                           ": in a script (or after an earlier job) it is "
                           "not the job just started; use kill $! (or a saved $!)");
      }
      if (program == "mpirun" &&
          line.find("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1") ==
              std::string::npos &&
          line.find("--allow-run-as-root") == std::string::npos) {
        problems.push_back("mpirun without OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) (refused as root)");
      }
      if (!entry.check_paths) continue;
      // Flags of build/bin/lens <command> and of build/bin/simple_train_loop, wherever they
      // appear on the line (a launcher's program included).
      for (size_t k = i; k < command.size(); ++k) {
        const std::string& w = command[k];
        std::string program_name;
        std::string subcommand;
        if (w == "build/bin/lens" && k + 1 < command.size()) {
          program_name = "lens";
          subcommand = command[k + 1];
        } else if (w == "build/bin/simple_train_loop") {
          program_name = "simple_train_loop";
        } else {
          if (starts_with(w, "build/bin/") && !fs::exists(kBuild / "bin" / w.substr(10))) {
            problems.push_back(w + " does not exist in this build");
          }
          for (const char* dir : {"scripts/", "examples/", "fuzz/", "tests/"}) {
            if (starts_with(w, dir) && !fs::exists(kSource / w)) {
              problems.push_back(w + " does not exist in the repository");
            }
          }
          continue;
        }
        if (!fs::exists(kBuild / "bin" / program_name)) {
          problems.push_back(w + " does not exist in this build");
          continue;
        }
        const std::string& help = help_of(program_name, subcommand);
        for (size_t f = k + 1; f < command.size() && command[f] != "--"; ++f) {
          if (starts_with(command[f], "build/bin/")) break;  // the next program's flags
          static const std::regex flag(R"(--[a-z][a-z0-9-]*)");
          for (std::sregex_iterator it(command[f].begin(), command[f].end(), flag), end; it != end;
               ++it) {
            const std::string name = it->str();
            if (help.find(name) == std::string::npos) {
              problems.push_back(w + (subcommand.empty() ? "" : " " + subcommand) + ": " + name +
                                 " is not in its --help");
            }
          }
        }
      }
    }
  }
  return problems;
}

// Runs a kRun or kEnv block; returns what went wrong (empty: nothing).
std::string run_block(const Block& block, const Entry& entry, const std::string& name) {
  const fs::path dir = scratch_dir(name);
  std::string text;
  for (const std::string& line : block.lines) text += line + "\n";
  if (block.lang == "python") {
    text = "cat > .doc-block.py <<'LENS_DOC_PYTHON'\n" + text + "LENS_DOC_PYTHON\n" + entry.env +
           " PYTHONPATH=$PWD/build/python /usr/bin/python3 .doc-block.py\n";
  }
  const std::string grpc = std::to_string(free_port());
  const std::string http = std::to_string(free_port());
  std::string script = "set -e\nexport LENS_DOC_GRPC_PORT=4317 LENS_DOC_HTTP_PORT=4318\n";
  if (*entry.before != '\0') {
    // Started first, and waited for: the block's first command needs it.
    script += std::string(entry.before) +
              "\nfor i in $(seq 400); do grep -q '^lens collect: listening' .doc-block.log && "
              "break; sleep 0.05; done\n";
  }
  script += text;
  if (entry.mode == Mode::kEnv) {
    script += "build/bin/lens config --prefix MEGATRON_OTEL > lens-config.json\n";
  }
  // Background collectors: each must be listening (its first line, in the output or in a file
  // of this directory), then stop cleanly on SIGTERM.
  script += R"(
jobs_left=$(jobs -p | wc -l)
for i in $(seq 400); do
  listening=$(cat .doc-block.log $(find . -name listening -type f) 2> /dev/null |
              grep -c '^lens collect: listening' || true)
  [ "$listening" -ge "$jobs_left" ] && break
  for p in $(jobs -p); do
    kill -0 "$p" 2> /dev/null || { echo "a background job ended early"; exit 90; }
  done
  sleep 0.05
done
for p in $(jobs -p); do
  kill -TERM "$p" 2> /dev/null || true  # (the block may have stopped it itself)
  wait "$p" || { status=$?; echo "a background job exited with status $status"; exit 91; }
done
echo "doc block done"
)";
  script = replace_all(replace_all(script, "4317", grpc), "4318", http);
  script = replace_all(script, "MASTER_PORT=29500", "MASTER_PORT=" + std::to_string(free_port()));
  // The block's own output goes to .doc-block.log, where the loop above reads it.
  const Output out = run_bash("exec > .doc-block.log 2>&1\n" + script, dir, 90);
  const std::string log = read_file(dir / ".doc-block.log");
  std::string problem;
  if (out.status != 0 || log.find("doc block done") == std::string::npos) {
    problem = "exit status " + std::to_string(out.status) + "; output:\n" + log + out.text;
  } else if (log.find(entry.expect) == std::string::npos) {
    problem = "its output lacks '" + std::string(entry.expect) + "'; output:\n" + log;
  }
  if (problem.empty()) {
    fs::remove_all(dir);
  } else {
    problem += "(kept for a look: " + dir.string() + ")";
  }
  return problem;
}

// Runs each `$ command` of a transcript block and compares what it prints with the doc.
std::vector<std::string> run_transcript(const Block& block, const std::string& name) {
  std::vector<std::string> problems;
  const fs::path dir = scratch_dir(name);
  for (size_t i = 0; i < block.lines.size(); ++i) {
    if (!starts_with(block.lines[i], "$ ")) continue;
    const std::string command = block.lines[i].substr(2);
    std::string expected;
    for (size_t j = i + 1; j < block.lines.size() && !starts_with(block.lines[j], "$ "); ++j) {
      expected += block.lines[j] + "\n";
    }
    const Output out = run_bash(command, dir, 30);
    if (out.text != expected) {
      problems.push_back("`" + command + "` printed:\n" + out.text + "the doc shows:\n" + expected);
    }
  }
  fs::remove_all(dir);
  return problems;
}

TEST(DocCommands, EveryCommandBlockIsInTheTable) {
  const std::vector<Block> blocks = command_blocks();
  // The docs had 41 command blocks when this test was written; fewer means the scan broke.
  ASSERT_GE(blocks.size(), 35u);
  std::vector<bool> used(kBlocks.size(), false);
  for (const Block& block : blocks) {
    bool found = false;
    for (size_t k = 0; k < kBlocks.size() && !found; ++k) {
      if (!used[k] && block.file == kBlocks[k].file && !block.lines.empty() &&
          block.lines[0] == kBlocks[k].first_line) {
        used[k] = found = true;
      }
    }
    EXPECT_TRUE(found) << block.where() << ": a command block that kBlocks does not name (run it "
                       << "here, or say why it cannot run): " << block.lines[0];
  }
  for (size_t k = 0; k < kBlocks.size(); ++k) {
    EXPECT_TRUE(used[k]) << "kBlocks names a block that the docs no longer have: "
                         << kBlocks[k].file << ": " << kBlocks[k].first_line;
  }
}

TEST(DocCommands, EveryCommandBlockRunsOrIsCheckedAgainstTheBuild) {
  const std::vector<Block> blocks = command_blocks();
  std::vector<bool> used(kBlocks.size(), false);
  int ran = 0;
  for (const Block& block : blocks) {
    const Entry* entry = nullptr;
    for (size_t k = 0; k < kBlocks.size() && entry == nullptr; ++k) {
      if (!used[k] && block.file == kBlocks[k].file && block.lines[0] == kBlocks[k].first_line) {
        used[k] = true;
        entry = &kBlocks[k];
      }
    }
    if (entry == nullptr) continue;  // reported by EveryCommandBlockIsInTheTable
    SCOPED_TRACE(block.where());
    const auto started = std::chrono::steady_clock::now();
    for (const std::string& problem : check_block(block, *entry)) {
      ADD_FAILURE() << block.where() << ": " << problem;
    }
    const std::string name =
        std::to_string(block.line) + "-" + fs::path(block.file).stem().string();
    switch (entry->mode) {
      case Mode::kRun:
      case Mode::kEnv:
        if (const std::string problem = run_block(block, *entry, name); !problem.empty()) {
          ADD_FAILURE() << block.where() << " does not run as written: " << problem;
        }
        ++ran;
        break;
      case Mode::kTranscript:
        for (const std::string& problem : run_transcript(block, name)) {
          ADD_FAILURE() << block.where() << ": " << problem;
        }
        ++ran;
        break;
      case Mode::kNotRun:
        break;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (entry->mode == Mode::kNotRun) {
      std::printf("%s checked, not run: %s\n", block.where().c_str(), entry->why);
    } else {
      std::printf("%s ran (%.1f s)\n", block.where().c_str(), seconds);
    }
  }
  EXPECT_GE(ran, 12);
}

}  // namespace
