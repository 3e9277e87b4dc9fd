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
// parallel runs do not collide), as are MASTER_PORT=29500 and torchrun's default port (through
// PET_MASTER_PORT); each in a process group of its own, killed at the end. `lens run` recipes
// run with 2 ranks and a few steps (the table's substitutions), a `lens report` block on the run
// its doc names (the table's setup), and transcripts may show "…" for values that vary. The
// blocks that run an example trainer are tests of their own, skipped with the reason where it
// cannot run (no libtorch in the build, no torch for python3). Single-threaded.
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
  kTranscript,  // each `$ command` runs and prints exactly the lines that follow it ("…" in a
                // line stands for any text: values that vary from run to run)
  kNotRun,      // checked, not run: `why` says what it needs that a test cannot have here
};

struct Entry {
  const char* file;
  const char* first_line;  // the block's first line, as written
  Mode mode;
  const char* why = "";     // kNotRun: what it needs that this test cannot have
  bool check_paths = true;  // false: the block names files of another build or machine
  const char* before = "";  // kRun: what the block expects to be running already
  // kRun: what its output must have (what the block is for), each line of it somewhere.
  const char* expect = "";
  const char* env = "";  // kRun of a ```python block: variables it runs with (as documented)
  // kRun: commands run to completion first, in the block's directory (the telemetry a
  // `lens report` block reads, made as the docs say next to the block).
  const char* setup = "";
  // kRun: replacements in the block's text before it runs (fewer ranks and steps than the docs
  // show, so that it takes seconds on 2 cores); the text as written is what is checked.
  std::vector<std::pair<std::string, std::string>> substitute = {};
};

// Every command block of the docs. Keep it in the docs' order.
const std::vector<Entry> kBlocks = {
    {"README.md",
     "scripts/demo.sh     # installs the Debian packages, builds, and runs the main job",
     Mode::kNotRun, "installs packages and builds lens and the trainer: minutes, as root"},
    {.file = "README.md",
     .first_line = "export PYTHONPATH=$PWD/build/python",
     .mode = Mode::kRun,
     .expect = "training done: 4 iterations\n"
               "lens run: done; report: lens-runs/run-",
     .substitute = {{"run_simple_mcore_train_loop.py",
                     "run_simple_mcore_train_loop.py --train-iters 4"},
                    {"pretrain_gpt.py", "pretrain_gpt.py --train-iters 4"}}},
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
    {.file = "docs/megatron.md",
     .first_line = "# one process, spans printed as JSON lines",
     .mode = Mode::kRun,
     .expect = "training done: 6 iterations",
     .substitute =
         {{"MEGATRON_OTEL_EXPORTER=console build/bin/simple_train_loop\n",
           "MEGATRON_OTEL_EXPORTER=console build/bin/simple_train_loop --train-iters 6\n"},
          {"--save-interval 25", "--save-interval 3 --train-iters 6"}}},
    {"docs/megatron.md",
     "# two processes under Open MPI (ranks from OMPI_COMM_WORLD_*), exporting to lens collect",
     Mode::kRun, "", true, "", "training done: 50 iterations"},
    {.file = "docs/megatron.md",
     .first_line =
         "build/bin/lens run --nproc-per-node 4 -- build/bin/simple_train_loop --train-iters 60",
     .mode = Mode::kRun,
     .expect = "lens run: 2 rank(s) of build/bin/simple_train_loop, run id run-\n"
               "[rank 0] training done: 8 iterations\n"
               "lens run: done; report: lens-runs/run-",
     .substitute = {{"--nproc-per-node 4", "--nproc-per-node 2"},
                    {"--train-iters 60", "--train-iters 8"}}},
    {.file = "docs/megatron.md",
     .first_line = "# 1. Local development with the console exporter: spans and metrics as JSON "
                   "lines on stdout.",
     .mode = Mode::kRun,
     .expect = "training done: 6 iterations\n"
               "training done: 30 iterations\n"
               "report: ./otlp-sampled/report.html",
     .substitute = {{"build/bin/simple_train_loop\n",
                     "build/bin/simple_train_loop --train-iters 6\n"},
                    {"--train-iters 200", "--train-iters 30"}}},
    {"docs/python.md", "import os", Mode::kRun, "", true, "", "\"name\":\"train_step\"",
     "NEMO_LENS_ENABLED=1 NEMO_LENS_SPAN_GROUPS=per_step NEMO_LENS_EXPORTER=console"},
    {.file = "docs/python.md",
     .first_line = "export PYTHONPATH=$PWD/build/python",
     .mode = Mode::kRun,
     .expect = "report: ./otlp-py-local/report.html\n"
               "report: ./otlp-py-sampled/report.html\n"
               "lens run: done; report: lens-runs/run-",
     .substitute = {{"--train-iters 200 --log-interval 50", "--train-iters 20 --log-interval 5"},
                    {"run_simple_mcore_train_loop.py\n",
                     "run_simple_mcore_train_loop.py --train-iters 4\n"},
                    {"pretrain_gpt.py\n", "pretrain_gpt.py --train-iters 4\n"}}},
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
    {.file = "docs/report.md",
     .first_line = "build/bin/lens report ./lens-otlp",
     .mode = Mode::kRun,
     .expect = "rank 1 spends +\n"
               "ms per step in forward_backward from iteration \n"
               "ranks: 2 of world size 2, iterations: 12 (1-12), spans: \n"
               "report: ./lens-otlp/report.html\n"
               "summary: ./lens-otlp/summary.json\n"
               "perfetto trace: ./lens-otlp/trace.json (open in ui.perfetto.dev)",
     // The run the doc names, with 2 ranks and 12 iterations.
     .setup = "build/bin/lens run --nproc-per-node 2 --out ./lens-otlp -- "
              "build/bin/simple_train_loop --train-iters 12 --slow-rank 1 --slow-ms 100"},
    {"docs/report.md",
     "build/bin/lens report DIR [-o report.html] [--perfetto trace.json] [--perfetto-all-ranks]",
     Mode::kNotRun, "usage synopsis (its flags are checked)"},
    {"docs/report.md", "$ build/bin/lens report /no/such/run", Mode::kTranscript},
    {"docs/report.md", "build/bin/lens report DIR_A DIR_B [...] [-o compare.html] [--run-id ID]",
     Mode::kNotRun, "usage synopsis (its flags are checked)"},
    {"docs/report.md",
     "$ NEMO_LENS_RUN_ID=run-a build/bin/lens run --nproc-per-node 2 --out ./run-a -- "
     "build/bin/simple_train_loop --train-iters 12 > /dev/null",
     Mode::kTranscript},
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
    {.file = "docs/run.md",
     .first_line =
         "build/bin/lens run --nproc-per-node 4 -- build/bin/simple_train_loop --train-iters 60 \\",
     .mode = Mode::kRun,
     .expect = "rank 1 spends +\n"
               "ms per step in forward_backward from iteration \n"
               "; the other ranks wait for it in communication (\n"
               "lens run: done; report: lens-runs/run-",
     .substitute = {{"--nproc-per-node 4", "--nproc-per-node 2"},
                    {"--train-iters 60", "--train-iters 12"},
                    {"--slow-rank 2", "--slow-rank 1"}}},
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

// The command blocks of one doc: shell blocks, usage blocks of the lens command, and
// transcripts.
std::vector<Block> blocks_in(const std::string& file, const std::string& text) {
  std::vector<Block> blocks;
  std::istringstream in(text);
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
  return blocks;
}

std::vector<Block> command_blocks() {
  std::vector<Block> blocks;
  for (const fs::path& path : doc_files()) {
    const std::vector<Block> more =
        blocks_in(fs::relative(path, kSource).string(), read_file(path));
    blocks.insert(blocks.end(), more.begin(), more.end());
  }
  return blocks;
}

// What `table` lacks for `blocks`: a block it does not name, an entry whose block is gone.
std::vector<std::string> table_problems(const std::vector<Block>& blocks,
                                        const std::vector<Entry>& table) {
  std::vector<std::string> problems;
  std::vector<bool> used(table.size(), false);
  for (const Block& block : blocks) {
    bool found = false;
    for (size_t k = 0; k < table.size() && !found; ++k) {
      if (!used[k] && block.file == table[k].file && !block.lines.empty() &&
          block.lines[0] == table[k].first_line) {
        used[k] = found = true;
      }
    }
    if (!found) {
      problems.push_back(
          block.where() + ": a command block that kBlocks does not name (run it " +
          "here, or say why it cannot run): " + (block.lines.empty() ? "" : block.lines[0]));
    }
  }
  for (size_t k = 0; k < table.size(); ++k) {
    if (!used[k]) {
      problems.push_back("kBlocks names a block that the docs no longer have: " +
                         std::string(table[k].file) + ": " + table[k].first_line);
    }
  }
  return problems;
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

// A scratch directory whose `build` is this build tree (links to its entries) and whose
// `examples` is the repository's, except that
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
  // The repository's example programs, which blocks run from the repository root.
  fs::create_symlink(kSource / "examples", dir / "examples");
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
  for (const auto& [from, to] : entry.substitute) {
    if (text.find(from) == std::string::npos) {
      return "the table replaces '" + from + "', which the block no longer has";
    }
    text = replace_all(text, from, to);
  }
  if (block.lang == "python") {
    text = "cat > .doc-block.py <<'LENS_DOC_PYTHON'\n" + text + "LENS_DOC_PYTHON\n" + entry.env +
           " PYTHONPATH=$PWD/build/python /usr/bin/python3 .doc-block.py\n";
  }
  const std::string grpc = std::to_string(free_port());
  const std::string http = std::to_string(free_port());
  std::string script = "set -e\nexport LENS_DOC_GRPC_PORT=4317 LENS_DOC_HTTP_PORT=4318\n";
  if (*entry.setup != '\0') {
    script +=
        "( " + std::string(entry.setup) +
        " ) > .doc-setup.log 2>&1 || { echo 'the setup failed:'; cat .doc-setup.log; exit 92; }\n";
  }
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
running=$(jobs -pr)  # (a job that the block waited for may still be listed, done)
jobs_left=$(echo $running | wc -w)
for i in $(seq 400); do
  listening=$(cat .doc-block.log $(find . -name listening -type f) 2> /dev/null |
              grep -c '^lens collect: listening' || true)
  [ "$listening" -ge "$jobs_left" ] && break
  for p in $running; do
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
  // torchrun's rendezvous port, 29500 unless given: a free one (its flags read PET_<FLAG>).
  script = "export PET_MASTER_PORT=" + std::to_string(free_port()) + "\n" + script;
  // The block's own output goes to .doc-block.log, where the loop above reads it.
  // At most 3 minutes (python.md's Python examples, the longest block, take about a minute on 2
  // busy cores).
  const Output out = run_bash("exec > .doc-block.log 2>&1\n" + script, dir, 180);
  const std::string log = read_file(dir / ".doc-block.log");
  std::string problem;
  if (out.status != 0 || log.find("doc block done") == std::string::npos) {
    problem = "exit status " + std::to_string(out.status) + "; output:\n" + log + out.text;
  } else {
    std::istringstream expected(entry.expect);
    for (std::string line; std::getline(expected, line);) {
      if (log.find(line) == std::string::npos) {
        problem = "its output lacks '" + line + "'; output:\n" + log;
        break;
      }
    }
  }
  if (problem.empty()) {
    fs::remove_all(dir);
  } else {
    problem += "(kept for a look: " + dir.string() + ")";
  }
  return problem;
}

// Whether `actual` is `expected`, line by line, where "…" in an expected line stands for any
// text (a value that varies from run to run).
bool transcript_matches(const std::string& expected, const std::string& actual) {
  std::istringstream want(expected);
  std::istringstream got(actual);
  std::string w;
  std::string g;
  while (true) {
    const bool more_w = static_cast<bool>(std::getline(want, w));
    const bool more_g = static_cast<bool>(std::getline(got, g));
    if (!more_w || !more_g) return more_w == more_g;
    const std::string ellipsis = "…";
    if (w.find(ellipsis) == std::string::npos) {
      if (w != g) return false;
      continue;
    }
    std::string pattern;
    for (size_t at = 0; at < w.size();) {
      if (w.compare(at, ellipsis.size(), ellipsis) == 0) {
        pattern += ".*";
        at += ellipsis.size();
      } else {
        if (std::string("\\^$.|?*+()[]{}").find(w[at]) != std::string::npos) pattern += '\\';
        pattern += w[at++];
      }
    }
    if (!std::regex_match(g, std::regex(pattern))) return false;
  }
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
    const Output out = run_bash(command, dir, 60);
    if (!transcript_matches(expected, out.text)) {
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
  for (const std::string& problem : table_problems(blocks, kBlocks)) ADD_FAILURE() << problem;
}

// The check above, on README.md with one more block: a new block that the table does not name
// fails, whatever its kind (a shell block, a transcript, a usage line of the lens command).
TEST(DocCommands, ABlockTheTableDoesNotNameFails) {
  const std::string readme = read_file(kSource / "README.md");
  // The problems of README.md alone (the table's entries of the other docs are unused here).
  const auto readme_problems = [](const std::string& text) {
    std::vector<std::string> problems = table_problems(blocks_in("README.md", text), kBlocks);
    problems.erase(std::remove_if(problems.begin(), problems.end(),
                                  [](const std::string& p) {
                                    return p.rfind("kBlocks names a block", 0) == 0 &&
                                           p.find(": README.md: ") == std::string::npos;
                                  }),
                   problems.end());
    return problems;
  };
  EXPECT_EQ(readme_problems(readme), std::vector<std::string>{});
  const int line = static_cast<int>(std::count(readme.begin(), readme.end(), '\n')) + 2;
  for (const auto& [added, first] : std::vector<std::pair<std::string, std::string>>{
           {"```sh\nbuild/bin/lens report ./new-run\n```\n", "build/bin/lens report ./new-run"},
           {"```\n$ build/bin/lens config\n{}\n```\n", "$ build/bin/lens config"},
           {"```\nbuild/bin/lens run -- true\n```\n", "build/bin/lens run -- true"},
           {"```python\nimport nemo.lens\n```\n", "import nemo.lens"}}) {
    EXPECT_EQ(readme_problems(readme + "\n" + added),
              std::vector<std::string>{"README.md:" + std::to_string(line) +
                                       ": a command block that kBlocks does not name (run it "
                                       "here, or say why it cannot run): " +
                                       first})
        << added;
  }
}

// The blocks that run an example trainer: build/bin/simple_train_loop (built only with libtorch,
// LENS_BUILD_TORCH) or the Python examples (PyTorch for /usr/bin/python3), in the block or in
// its setup. Each kind is a test of its own (so that ctest runs them side by side), skipped with
// the reason where it cannot run.
bool mentions(const Block& block, const Entry& entry, const std::string& what) {
  if (std::string(entry.setup).find(what) != std::string::npos) return true;
  return std::any_of(block.lines.begin(), block.lines.end(),
                     [&](const std::string& line) { return line.find(what) != std::string::npos; });
}

enum class Kind { kPlain, kTrainer, kLaunchers, kPythonExamples };

Kind kind_of(const Block& block, const Entry& entry) {
  if (mentions(block, entry, "examples/python/")) return Kind::kPythonExamples;
  if (!mentions(block, entry, "build/bin/simple_train_loop")) return Kind::kPlain;
  // A launcher's recipe: torchrun, mpirun, or ranks started by hand.
  for (const char* launcher : {"torchrun ", "mpirun ", "WORLD_SIZE="}) {
    if (mentions(block, entry, launcher)) return Kind::kLaunchers;
  }
  return Kind::kTrainer;
}

// Why a trainer block cannot run here; "" when it can.
std::string trainer_missing(const Block& block, const Entry& entry) {
  if (mentions(block, entry, "build/bin/simple_train_loop") &&
      !fs::exists(kBuild / "bin" / "simple_train_loop")) {
    return "build/bin/simple_train_loop is not in this build (it needs libtorch: "
           "LENS_BUILD_TORCH=ON and Torch found)";
  }
  if (mentions(block, entry, "examples/python/")) {
    static const bool torch = [] {
      const fs::path dir =
          fs::temp_directory_path() / ("lens-doc-commands-" + std::to_string(getpid()) + "-torch");
      fs::create_directories(dir);
      const bool ok = run_bash("/usr/bin/python3 -c 'import torch'", dir, 60).status == 0;
      fs::remove_all(dir);
      return ok;
    }();
    if (!torch) return "/usr/bin/python3 cannot import torch (Debian's python3-torch)";
  }
  return "";
}

// Checks and runs the blocks of one kind; returns how many ran. A block that cannot run here is
// added to `skipped` with the reason.
int check_and_run(Kind kind, std::vector<std::string>& skipped) {
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
    if (kind_of(block, *entry) != kind) continue;
    SCOPED_TRACE(block.where());
    if (const std::string why = trainer_missing(block, *entry); !why.empty()) {
      std::printf("%s skipped: %s\n", block.where().c_str(), why.c_str());
      skipped.push_back(block.where() + ": " + why);
      continue;
    }
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
  return ran;
}

// Runs the blocks of one kind: at least `at_least` of them run (fewer means that blocks stopped
// running: a mode changed by mistake), or are skipped with the reason.
void run_kind(Kind kind, int at_least) {
  std::vector<std::string> skipped;
  const int ran = check_and_run(kind, skipped);
  EXPECT_GE(ran + static_cast<int>(skipped.size()), at_least);
  if (!skipped.empty()) {
    std::string why;
    for (const std::string& s : skipped) why += "\n  " + s;
    GTEST_SKIP() << skipped.size() << " blocks not run nor checked:" << why;
  }
}

TEST(DocCommands, EveryCommandBlockRunsOrIsCheckedAgainstTheBuild) { run_kind(Kind::kPlain, 15); }

// lens run and lens report recipes with build/bin/simple_train_loop.
TEST(DocCommands, TheTrainerBlocksRunOrAreCheckedAgainstTheBuild) { run_kind(Kind::kTrainer, 4); }

// The recipes of torchrun, mpirun and ranks started by hand, with build/bin/simple_train_loop.
TEST(DocCommands, TheLauncherRecipesRun) { run_kind(Kind::kLaunchers, 4); }

// The Python examples, with Debian's PyTorch.
TEST(DocCommands, ThePythonExampleBlocksRun) { run_kind(Kind::kPythonExamples, 2); }

}  // namespace
