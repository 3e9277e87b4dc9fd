// Receivers for the OTLP exporter tests, on loopback with bounded waits:
// - ScriptedHttpReceiver: an HTTP/1.1 server on a raw socket that records every request (method,
//   path, headers, body) and answers from a script (status, headers, body), then with a default
//   answer that can change while it runs, or never answers;
// - CollectProcess: a real `lens collect` child process (the binary next to this test binary);
// - TlsFiles: a throwaway CA with a server certificate (127.0.0.1, localhost) and a client
//   certificate, made with the openssl command in a temporary directory;
// - CapturedOutput: what the process writes on its stdout and stderr meanwhile;
// - eventually(): a bounded wait for a condition.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace lens::test_servers {

using namespace std::chrono_literals;

// Timing bounds are looser in sanitizer builds.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
// AddressSanitizer keeps freed memory in its quarantine (256 MiB by default) and pads every
// allocation, so RSS follows the volume allocated, not what is live: no RSS bound there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssIsMeaningful = false;
#else
constexpr bool kRssIsMeaningful = true;
#endif

struct ReceivedRequest {
  std::string method;
  std::string path;
  std::map<std::string, std::string> headers;  // keys lower-cased
  std::string body;
  int answered = 0;  // the status it is answered with
};

struct ScriptedResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string content_type = "application/x-protobuf";
};

// A TCP listener on 127.0.0.1; `port` 0 picks a free one.
inline int listen_on(int port, int* bound_port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, 16) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot listen on 127.0.0.1:" + std::to_string(port));
  }
  socklen_t size = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  *bound_port = ntohs(address.sin_port);
  return fd;
}

// A port that nothing listens on right now (bound, then released).
inline int free_port() {
  int port = 0;
  ::close(listen_on(0, &port));
  return port;
}

class ScriptedHttpReceiver {
 public:
  // `answer` false: accept connections and read, never answer (a receiver that hangs).
  explicit ScriptedHttpReceiver(bool answer = true, int port = 0) : answer_(answer) {
    fd_ = listen_on(port, &port_);
    thread_ = std::thread([this] { accept_loop(); });
  }
  ~ScriptedHttpReceiver() {
    running_ = false;
    if (thread_.joinable()) thread_.join();
    for (auto& t : connections_) t.join();
    ::close(fd_);
  }
  ScriptedHttpReceiver(const ScriptedHttpReceiver&) = delete;
  ScriptedHttpReceiver& operator=(const ScriptedHttpReceiver&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  // Answers in order; after the script, the default answer (200 with an empty body unless
  // set_default_answer() says otherwise).
  void push(ScriptedResponse response) {
    std::lock_guard<std::mutex> lock(mutex_);
    script_.push_back(std::move(response));
  }
  void set_default_answer(ScriptedResponse response) {
    std::lock_guard<std::mutex> lock(mutex_);
    default_ = std::move(response);
  }

  std::vector<ReceivedRequest> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

  bool wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
  }

 private:
  void accept_loop() {
    while (running_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      connections_.emplace_back([this, client] { serve(client); });
    }
  }

  void serve(int fd) {
    std::string buffer;
    bool continued = false;  // "100 Continue" sent for the request being read
    while (running_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char chunk[65536];
      const ssize_t n = ::read(fd, chunk, sizeof(chunk));
      if (n <= 0) break;
      buffer.append(chunk, static_cast<std::size_t>(n));
      if (!answer_) continue;
      while (handle_one(fd, buffer, continued)) {
      }
    }
    ::close(fd);
  }

  // Parses one complete request at the front of `buffer`, answers it; false if incomplete.
  bool handle_one(int fd, std::string& buffer, bool& continued) {
    const auto head_end = buffer.find("\r\n\r\n");
    if (head_end == std::string::npos) return false;
    ReceivedRequest request;
    std::istringstream head(buffer.substr(0, head_end));
    std::string line;
    std::getline(head, line);
    std::istringstream first(line);
    first >> request.method >> request.path;
    while (std::getline(head, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, colon);
      for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      request.headers[key] = value;
    }
    const std::size_t length =
        request.headers.count("content-length") ? std::stoul(request.headers["content-length"]) : 0;
    if (request.headers.count("expect") && !continued) {
      const std::string go = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)!::write(fd, go.data(), go.size());
      continued = true;
    }
    if (buffer.size() < head_end + 4 + length) return false;
    continued = false;
    request.body = buffer.substr(head_end + 4, length);
    buffer.erase(0, head_end + 4 + length);
    ScriptedResponse response;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!script_.empty()) {
        response = std::move(script_.front());
        script_.pop_front();
      } else {
        response = default_;
      }
      request.answered = response.status;
      requests_.push_back(std::move(request));
    }
    cv_.notify_all();
    std::string out = "HTTP/1.1 " + std::to_string(response.status) + " Scripted\r\n";
    out += "Content-Type: " + response.content_type + "\r\n";
    out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
    for (const auto& [key, value] : response.headers) out += key + ": " + value + "\r\n";
    out += "\r\n" + response.body;
    (void)!::write(fd, out.data(), out.size());
    return true;
  }

  const bool answer_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> running_{true};
  std::thread thread_;
  std::vector<std::thread> connections_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<ScriptedResponse> script_;
  ScriptedResponse default_;
  std::vector<ReceivedRequest> requests_;
};

// Waits (bounded) until `done` holds; returns it.
template <class Predicate>
bool eventually(Predicate done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::vector<std::string> lines;
  std::istringstream in(read_text(path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// `lens collect` as a child process, its listening line parsed.
class CollectProcess {
 public:
  explicit CollectProcess(std::vector<std::string> extra = {}, std::string grpc = "127.0.0.1:0",
                          std::string http = "127.0.0.1:0") {
    static int next = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("lens-otlp-test-" + std::to_string(::getpid()) + "-" + std::to_string(next++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    const std::string cli =
        (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "lens").string();
    std::vector<std::string> args{cli,      "collect", "--grpc", grpc,
                                  "--http", http,      "--out",  (dir_ / "out").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    int out_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, (dir_ / "stderr.txt").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    // A clean environment, but for the sanitizer's options (suppressions for the uninstrumented
    // libraries under ThreadSanitizer).
    std::vector<std::string> environment;
    for (const char* name : {"TSAN_OPTIONS", "ASAN_OPTIONS", "UBSAN_OPTIONS"}) {
      if (const char* value = std::getenv(name))
        environment.push_back(std::string(name) + "=" + value);
    }
    std::vector<char*> envp;
    for (auto& entry : environment) envp.push_back(entry.data());
    envp.push_back(nullptr);
    const int error =
        ::posix_spawn(&pid_, cli.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    if (error != 0) throw std::runtime_error("cannot start " + cli);
    stdout_fd_ = out_pipe[0];
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (listening_.find('\n') == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      pollfd p{stdout_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buffer[512];
      const ssize_t n = ::read(stdout_fd_, buffer, sizeof(buffer));
      if (n <= 0) break;
      listening_.append(buffer, static_cast<std::size_t>(n));
    }
    listening_ = listening_.substr(0, listening_.find('\n'));
  }
  ~CollectProcess() {
    if (pid_ > 0) stop(SIGKILL);
    ::close(stdout_fd_);
    std::filesystem::remove_all(dir_);
  }
  CollectProcess(const CollectProcess&) = delete;
  CollectProcess& operator=(const CollectProcess&) = delete;

  // "127.0.0.1:PORT" of "grpc" or "http".
  std::string address(const std::string& key) const {
    const std::string marker = " " + key + "=";
    const auto start = listening_.find(marker);
    if (start == std::string::npos) return "";
    const auto begin = start + marker.size();
    return listening_.substr(begin, listening_.find(' ', begin) - begin);
  }
  const std::string& listening() const { return listening_; }

  // Sends `signal`, waits (bounded) for the exit; returns the exit status.
  int stop(int signal = SIGTERM) {
    ::kill(pid_, signal);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::vector<std::string> lines(const std::string& file) const {
    return read_lines(dir_ / "out" / file);
  }
  std::string err() const { return read_text(dir_ / "stderr.txt"); }

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string listening_;
};

// A CA, a server certificate it signed for 127.0.0.1 and localhost, a client certificate it
// signed, and a second CA that signed neither; PEM files in a fresh temporary directory (EC P-256
// keys, valid for a day), removed with the object. ok() false (and why in error()) when the
// openssl command failed.
class TlsFiles {
 public:
  TlsFiles() {
    static int next = 0;
    dir_ = std::filesystem::temp_directory_path() /
           ("lens-tls-test-" + std::to_string(::getpid()) + "-" + std::to_string(next++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "server.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                          "basicConstraints=CA:FALSE\n"
                                          "keyUsage=digitalSignature,keyEncipherment\n"
                                          "extendedKeyUsage=serverAuth\n";
    std::ofstream(dir_ / "client.ext") << "basicConstraints=CA:FALSE\n"
                                          "keyUsage=digitalSignature,keyEncipherment\n"
                                          "extendedKeyUsage=clientAuth\n";
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::vector<std::string> commands = {
        "openssl req -x509 " + key + " -keyout ca.key -out ca.pem -days 1 -subj '/CN=lens test CA'",
        "openssl req -x509 " + key +
            " -keyout other-ca.key -out other-ca.pem -days 1 -subj '/CN=lens other CA'",
        "openssl req " + key + " -keyout server.key -out server.csr -subj '/CN=localhost'",
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1"
        " -extfile server.ext -out server.pem",
        "openssl req " + key + " -keyout client.key -out client.csr -subj '/CN=lens client'",
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1"
        " -extfile client.ext -out client.pem",
    };
    for (const std::string& command : commands) {
      const std::string line = "cd '" + dir_.string() + "' && " + command + " >>openssl.log 2>&1";
      if (std::system(line.c_str()) != 0) {
        error_ = "'" + command + "' failed: " + read_text(dir_ / "openssl.log");
        return;
      }
    }
  }
  ~TlsFiles() { std::filesystem::remove_all(dir_); }
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  std::string ca() const { return (dir_ / "ca.pem").string(); }
  std::string other_ca() const { return (dir_ / "other-ca.pem").string(); }
  std::string server_certificate() const { return (dir_ / "server.pem").string(); }
  std::string server_key() const { return (dir_ / "server.key").string(); }
  std::string client_certificate() const { return (dir_ / "client.pem").string(); }
  std::string client_key() const { return (dir_ / "client.key").string(); }
  std::filesystem::path dir() const { return dir_; }

  // The `lens collect` flags serving TLS with the server certificate (mTLS: requiring a
  // client certificate signed by the CA).
  std::vector<std::string> collect_flags(bool mutual = false) const {
    std::vector<std::string> flags{"--tls-cert", server_certificate(), "--tls-key", server_key()};
    if (mutual) {
      flags.insert(flags.end(), {"--tls-client-ca", ca()});
    }
    return flags;
  }

 private:
  std::filesystem::path dir_;
  std::string error_;
};

// Sends this process's stdout and stderr (file descriptors 1 and 2: whatever writes them,
// libraries included) to a file until text() or the destructor puts them back.
class CapturedOutput {
 public:
  CapturedOutput() {
    static int next = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("lens-captured-" + std::to_string(::getpid()) + "-" + std::to_string(next++));
    std::fflush(stdout);
    std::fflush(stderr);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    saved_out_ = ::dup(1);
    saved_err_ = ::dup(2);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
  }
  ~CapturedOutput() {
    restore();
    std::filesystem::remove(path_);
  }
  CapturedOutput(const CapturedOutput&) = delete;
  CapturedOutput& operator=(const CapturedOutput&) = delete;

  // Puts stdout and stderr back and returns what was written meanwhile.
  std::string text() {
    restore();
    return read_text(path_);
  }

 private:
  void restore() {
    if (saved_out_ < 0) return;
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out_, 1);
    ::dup2(saved_err_, 2);
    ::close(saved_out_);
    ::close(saved_err_);
    saved_out_ = saved_err_ = -1;
  }

  std::filesystem::path path_;
  int saved_out_ = -1;
  int saved_err_ = -1;
};

}  // namespace lens::test_servers
