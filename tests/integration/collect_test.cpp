// `lens collect` as a real process: OTLP/gRPC (generated stubs, gzip too) and OTLP/HTTP
// (libcurl: protobuf, JSON, gzip) into the JSON line files; malformed input, tokens,
// --max-bytes, metrics and logs, bad flags. Loopback only, ports chosen by the collector,
// every wait bounded.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "opentelemetry/proto/collector/logs/v1/logs_service.grpc.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.grpc.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.grpc.pb.h"
#include "support/curl_post.hpp"
#include "support/run_process.hpp"
#include "support/spawn_args.hpp"

namespace lens {
namespace {

namespace logs_v1 = opentelemetry::proto::collector::logs::v1;
namespace metrics_v1 = opentelemetry::proto::collector::metrics::v1;
namespace trace_v1 = opentelemetry::proto::collector::trace::v1;
using Json = nlohmann::json;
using testing::run_process;

constexpr auto kTimeout = std::chrono::seconds(20);

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<Json> read_lines(const std::filesystem::path& path) {
  std::vector<Json> lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) {
    lines.push_back(Json::parse(line));  // throws, failing the test, on a bad line
  }
  return lines;
}

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

const std::string kTraceId = bytes({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
const std::string kTraceIdHex = "0102030405060708090a0b0c0d0e0f10";
const std::string kSpanId = bytes({0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18});
const std::string kSpanIdHex = "a1b2c3d4e5f60718";

trace_v1::ExportTraceServiceRequest trace_request(const std::string& span_name, int spans = 1,
                                                  std::int64_t rank = 3) {
  trace_v1::ExportTraceServiceRequest request;
  auto* rs = request.add_resource_spans();
  auto* attr = rs->mutable_resource()->add_attributes();
  attr->set_key("dl.rank");
  attr->mutable_value()->set_int_value(rank);
  auto* ss = rs->add_scope_spans();
  ss->mutable_scope()->set_name("collect-test");
  for (int i = 0; i < spans; ++i) {
    auto* span = ss->add_spans();
    span->set_trace_id(kTraceId);
    span->set_span_id(kSpanId);
    span->set_name(span_name);
    span->set_kind(opentelemetry::proto::trace::v1::Span::SPAN_KIND_INTERNAL);
    span->set_start_time_unix_nano(1'700'000'000'000'000'000ull);
    span->set_end_time_unix_nano(1'700'000'000'500'000'000ull);
  }
  return request;
}

std::string trace_json(const std::string& span_name) {
  const Json body = {
      {"resourceSpans",
       {{{"resource", {{"attributes", {{{"key", "dl.rank"}, {"value", {{"intValue", "3"}}}}}}}},
         {"scopeSpans",
          {{{"scope", {{"name", "collect-test"}}},
            {"spans",
             {{{"traceId", kTraceIdHex},
               {"spanId", kSpanIdHex},
               {"name", span_name},
               {"kind", 1},
               {"startTimeUnixNano", "1700000000000000000"},
               {"endTimeUnixNano", "1700000000500000000"}}}}}}}}}}};
  return body.dump();
}

std::string gzip(const std::string& data) {
  z_stream stream{};
  EXPECT_EQ(
      deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
      Z_OK);
  std::string out(deflateBound(&stream, data.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

struct HttpResult {
  long status = 0;
  std::string body;
  std::string headers;  // the response's header lines, as received
};

// One POST (tests/support/curl_post.hpp), without the 100-continue round trip, within 10 s.
HttpResult http_post(const std::string& url, const std::string& body,
                     std::vector<std::string> headers) {
  headers.push_back("Expect:");
  const lens::testing::PostAnswer answer = lens::testing::curl_post(url, body, headers, 10000);
  EXPECT_EQ(answer.result, CURLE_OK) << curl_easy_strerror(answer.result);
  return {answer.status, answer.body, answer.headers};
}

const std::string kProtobuf = "Content-Type: application/x-protobuf";
const std::string kJson = "Content-Type: application/json";

// A `lens collect` process: started with ports 0, its listening line parsed.
class Collector {
 public:
  explicit Collector(std::vector<std::string> extra_args = {}, std::vector<std::string> env = {}) {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("lens-collect-" + std::to_string(::getpid()) + "-" + std::to_string(next_id_++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    out_ = dir_ / "out";
    std::vector<std::string> args{LENS_CLI_PATH, "collect",     "--grpc", "127.0.0.1:0",
                                  "--http",      "127.0.0.1:0", "--out",  out_.string()};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    pid_ = spawn(args, dir_ / "stderr.txt", &stdout_fd_, env);
    listening_ = read_line(stdout_fd_);
  }

  ~Collector() {
    if (pid_ > 0) stop();
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
    std::error_code ignored;  // a test's files go with it
    std::filesystem::remove_all(dir_, ignored);
  }

  // Spawns `args` with stdout on a pipe and stderr into a file; returns the pid.
  static pid_t spawn(const std::vector<std::string>& args, const std::filesystem::path& err_path,
                     int* stdout_fd, std::vector<std::string> env = {}) {
    int out_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    std::vector<std::string> storage = args;
    const std::vector<char*> argv = lens::testing::null_terminated(storage);
    const std::vector<char*> envp = lens::testing::null_terminated(env);
    pid_t pid = 0;
    const int error =
        posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    ::close(out_pipe[1]);
    if (error != 0) {
      ::close(out_pipe[0]);
      throw std::runtime_error("cannot start " + args[0]);
    }
    *stdout_fd = out_pipe[0];
    return pid;
  }

  // The first stdout line, or what came before EOF or the timeout.
  static std::string read_line(int fd) {
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (text.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buffer[512];
      const ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n <= 0) break;
      text.append(buffer, static_cast<std::size_t>(n));
    }
    return text.substr(0, text.find('\n'));
  }

  // Waits (bounded) for `pid` to exit; kills it past the timeout. Returns its exit status.
  static int wait_exit(pid_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // SIGTERM, then the exit status.
  int stop(int signal = SIGTERM) {
    ::kill(pid_, signal);
    const int code = wait_exit(pid_);
    pid_ = -1;
    return code;
  }

  // "grpc" or "http" address from the listening line ("" when it has none).
  std::string address(const std::string& key) const {
    std::smatch match;
    const std::regex field(" " + key + "=(\\S+)");
    return std::regex_search(listening_, match, field) ? match[1].str() : "";
  }
  std::string url(const std::string& path) const { return "http://" + address("http") + path; }

  std::unique_ptr<trace_v1::TraceService::Stub> trace_stub() const {
    return trace_v1::TraceService::NewStub(
        grpc::CreateChannel(address("grpc"), grpc::InsecureChannelCredentials()));
  }

  const std::string& listening() const { return listening_; }
  const std::filesystem::path& out() const { return out_; }
  std::string err() const { return read_file(dir_ / "stderr.txt"); }

 private:
  static inline int next_id_ = 0;
  std::filesystem::path dir_;
  std::filesystem::path out_;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string listening_;
};

void with_deadline(grpc::ClientContext& context) {
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
}

grpc::Status grpc_export(const Collector& collector, const trace_v1::ExportTraceServiceRequest& r,
                         trace_v1::ExportTraceServiceResponse* response,
                         const std::string& token = "", bool compress = false) {
  grpc::ClientContext context;
  with_deadline(context);
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  if (compress) context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  return collector.trace_stub()->Export(&context, r, response);
}

// Sends raw bytes as a TraceService/Export request.
grpc::Status grpc_raw_export(const Collector& collector, const std::string& body) {
  grpc::GenericStub stub(
      grpc::CreateChannel(collector.address("grpc"), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  with_deadline(context);
  grpc::Slice slice(body);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/opentelemetry.proto.collector.trace.v1.TraceService/Export", {},
                 &request, &response, [&done](grpc::Status status) { done.set_value(status); });
  return done.get_future().get();
}

const Json* find_span(const std::vector<Json>& lines, const std::string& name) {
  for (const Json& line : lines) {
    for (const Json& rs : line.at("resourceSpans")) {
      for (const Json& ss : rs.at("scopeSpans")) {
        for (const Json& span : ss.at("spans")) {
          if (span.at("name") == name) return &span;
        }
      }
    }
  }
  return nullptr;
}

TEST(CollectTest, WritesTracesFromGrpcAndHttp) {
  Collector collector;
  ASSERT_THAT(collector.listening(),
              ::testing::MatchesRegex("lens collect: listening grpc=127\\.0\\.0\\.1:[0-9]+ "
                                      "http=127\\.0\\.0\\.1:[0-9]+ out=.*"))
      << collector.err();
  EXPECT_EQ(collector.listening().substr(collector.listening().find(" out=") + 5),
            collector.out().string());

  trace_v1::ExportTraceServiceResponse response;
  grpc::Status status = grpc_export(collector, trace_request("grpc-span"), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(response.has_partial_success());
  status = grpc_export(collector, trace_request("grpc-gzip-span"), &response, "", true);
  ASSERT_TRUE(status.ok()) << status.error_message();

  HttpResult http = http_post(collector.url("/v1/traces"),
                              trace_request("http-proto-span").SerializeAsString(), {kProtobuf});
  ASSERT_EQ(http.status, 200) << http.body;
  trace_v1::ExportTraceServiceResponse http_response;
  EXPECT_TRUE(http_response.ParseFromString(http.body));
  EXPECT_FALSE(http_response.has_partial_success());

  http = http_post(collector.url("/v1/traces"), trace_json("http-json-span"),
                   {kJson + "; charset=utf-8"});
  ASSERT_EQ(http.status, 200) << http.body;
  EXPECT_TRUE(Json::parse(http.body).is_object()) << http.body;

  http = http_post(collector.url("/v1/traces"),
                   gzip(trace_request("http-gzip-span").SerializeAsString()),
                   {kProtobuf, "Content-Encoding: gzip"});
  ASSERT_EQ(http.status, 200) << http.body;
  http = http_post(collector.url("/v1/traces"), gzip(trace_json("http-gzip-json-span")),
                   {kJson, "Content-Encoding: gzip"});
  ASSERT_EQ(http.status, 200) << http.body;

  EXPECT_EQ(collector.stop(), 0) << collector.err();
  const auto lines = read_lines(collector.out() / "traces.jsonl");
  ASSERT_EQ(lines.size(), 6u);
  for (const char* name : {"grpc-span", "grpc-gzip-span", "http-proto-span", "http-json-span",
                           "http-gzip-span", "http-gzip-json-span"}) {
    const Json* span = find_span(lines, name);
    ASSERT_NE(span, nullptr) << name;
    EXPECT_EQ(span->at("traceId"), kTraceIdHex) << name;
    EXPECT_EQ(span->at("spanId"), kSpanIdHex) << name;
    EXPECT_EQ(span->at("kind"), 1) << name;
  }
  EXPECT_EQ(lines[0]["resourceSpans"][0]["resource"]["attributes"][0]["key"], "dl.rank");
  EXPECT_TRUE(std::filesystem::exists(collector.out() / "metrics.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(collector.out() / "logs.jsonl"));
  const std::string err = collector.err();
  EXPECT_THAT(err, ::testing::HasSubstr("lens collect: stopped; 6 requests"));
  EXPECT_THAT(err, ::testing::HasSubstr("lens collect: rank 3: 6 spans, 0 points, 0 logs\n"));
}

TEST(CollectTest, MalformedRequestsAreRejectedAndServingGoesOn) {
  Collector collector;
  ASSERT_FALSE(collector.address("http").empty()) << collector.err();
  // Field 1, length 5, but only two bytes follow.
  const std::string truncated = bytes({0x0a, 0x05, 'a', 'b'});

  HttpResult http = http_post(collector.url("/v1/traces"), truncated, {kProtobuf});
  EXPECT_EQ(http.status, 400);
  EXPECT_FALSE(http.body.empty());  // a google.rpc.Status in protobuf

  http = http_post(collector.url("/v1/traces"), "{\"resourceSpans\": [", {kJson});
  EXPECT_EQ(http.status, 400);
  const Json status = Json::parse(http.body);
  EXPECT_EQ(status["code"], 3);
  EXPECT_FALSE(status["message"].get<std::string>().empty());

  auto bad_id = trace_request("bad-id-span");
  bad_id.mutable_resource_spans(0)->mutable_scope_spans(0)->mutable_spans(0)->set_trace_id("abc");
  http = http_post(collector.url("/v1/traces"), bad_id.SerializeAsString(), {kProtobuf});
  EXPECT_EQ(http.status, 400);

  http = http_post(collector.url("/v1/traces"), "not gzip", {kProtobuf, "Content-Encoding: gzip"});
  EXPECT_EQ(http.status, 400);

  http = http_post(collector.url("/v1/traces"), "hello", {"Content-Type: text/plain"});
  EXPECT_EQ(http.status, 415);
  EXPECT_THAT(http.body, ::testing::HasSubstr("application/x-protobuf"));

  http = http_post(collector.url("/v1/spans"), "x", {kProtobuf});
  EXPECT_EQ(http.status, 404);

  grpc::Status grpc_status = grpc_raw_export(collector, truncated);
  EXPECT_EQ(grpc_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << grpc_status.error_message();
  trace_v1::ExportTraceServiceResponse response;
  grpc_status = grpc_export(collector, bad_id, &response);
  EXPECT_EQ(grpc_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // Still serving, both protocols.
  http = http_post(collector.url("/v1/traces"), trace_request("after-http").SerializeAsString(),
                   {kProtobuf});
  EXPECT_EQ(http.status, 200) << http.body;
  grpc_status = grpc_export(collector, trace_request("after-grpc"), &response);
  EXPECT_TRUE(grpc_status.ok()) << grpc_status.error_message();

  EXPECT_EQ(collector.stop(), 0) << collector.err();
  const auto lines = read_lines(collector.out() / "traces.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(find_span(lines, "after-http"), nullptr);
  EXPECT_NE(find_span(lines, "after-grpc"), nullptr);
  EXPECT_THAT(collector.err(), ::testing::HasSubstr("8 malformed, 0 unauthenticated"));
}

TEST(CollectTest, TokenIsRequiredWhenSet) {
  Collector collector({"--token", "s3cret"});
  ASSERT_FALSE(collector.address("http").empty()) << collector.err();
  const std::string body = trace_request("token-span").SerializeAsString();

  EXPECT_EQ(http_post(collector.url("/v1/traces"), body, {kProtobuf}).status, 401);
  EXPECT_EQ(http_post(collector.url("/v1/traces"), body, {kProtobuf, "Authorization: Bearer wrong"})
                .status,
            401);
  EXPECT_EQ(
      http_post(collector.url("/v1/traces"), body, {kProtobuf, "Authorization: Bearer s3cret"})
          .status,
      200);

  trace_v1::ExportTraceServiceResponse response;
  EXPECT_EQ(grpc_export(collector, trace_request("token-span"), &response).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(grpc_export(collector, trace_request("token-span"), &response, "nope").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const grpc::Status ok = grpc_export(collector, trace_request("token-span"), &response, "s3cret");
  EXPECT_TRUE(ok.ok()) << ok.error_message();

  EXPECT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_EQ(read_lines(collector.out() / "traces.jsonl").size(), 2u);
  EXPECT_THAT(collector.err(), ::testing::HasSubstr("0 malformed, 4 unauthenticated"));
}

// The token can stay out of `ps`: a file, or the environment.
TEST(CollectTest, TokenFromAFileOrTheEnvironment) {
  const auto token_file =
      std::filesystem::path(::testing::TempDir()) / ("lens-token-" + std::to_string(::getpid()));
  std::ofstream(token_file) << "  f1le-t0ken\n";
  Collector from_file({"--token-file", token_file.string()});
  Collector from_env({}, {"LENS_COLLECT_TOKEN=env-t0ken"});
  Collector flag_wins({"--token", "flag-t0ken"}, {"LENS_COLLECT_TOKEN=env-t0ken"});
  const std::string body = trace_request("token-span").SerializeAsString();
  for (auto [collector, good, bad] : {std::tuple{&from_file, "f1le-t0ken", "env-t0ken"},
                                      std::tuple{&from_env, "env-t0ken", "f1le-t0ken"},
                                      std::tuple{&flag_wins, "flag-t0ken", "env-t0ken"}}) {
    ASSERT_FALSE(collector->address("http").empty()) << collector->err();
    EXPECT_EQ(http_post(collector->url("/v1/traces"), body,
                        {kProtobuf, std::string("Authorization: Bearer ") + good})
                  .status,
              200)
        << good;
    EXPECT_EQ(http_post(collector->url("/v1/traces"), body,
                        {kProtobuf, std::string("Authorization: Bearer ") + bad})
                  .status,
              401)
        << bad;
    trace_v1::ExportTraceServiceResponse response;
    EXPECT_TRUE(grpc_export(*collector, trace_request("t"), &response, good).ok());
    EXPECT_EQ(collector->stop(), 0);
    EXPECT_EQ(collector->err().find(good), std::string::npos);
  }
  std::filesystem::remove(token_file);
}

// google.rpc.Status {code = 1, message = 2} in the binary protobuf encoding (a message under
// 128 bytes: one length byte).
std::string rpc_status_protobuf(int code, const std::string& message) {
  return std::string{0x08, static_cast<char>(code), 0x12, static_cast<char>(message.size())} +
         message;
}

// Sends `body` to the Export method of `service` (e.g. "trace.v1.TraceService"), with the
// metadata "authorization: <authorization>" unless that is empty.
grpc::Status grpc_raw_call(const Collector& collector, const std::string& service,
                           const std::string& body, const std::string& authorization) {
  grpc::GenericStub stub(
      grpc::CreateChannel(collector.address("grpc"), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  with_deadline(context);
  if (!authorization.empty()) context.AddMetadata("authorization", authorization);
  grpc::Slice slice(body);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/opentelemetry.proto.collector." + service + "/Export", {}, &request,
                 &response, [&done](grpc::Status status) { done.set_value(status); });
  return done.get_future().get();
}

// The documented refusal (docs/collect.md, Responses) on every signal and both protocols: HTTP
// 401 with "WWW-Authenticate: Bearer" and a google.rpc.Status UNAUTHENTICATED (16) in the
// request's content type, gRPC UNAUTHENTICATED; for no token, a wrong one, a prefix or an
// extension of the right one, another scheme. Nothing refused is written; the token is never
// printed.
TEST(CollectTest, AMissingOrWrongTokenGetsTheDocumentedRefusal) {
  const std::string token = "t0ken-PLANTED-4f2a";
  Collector collector({"--token", token});
  ASSERT_FALSE(collector.address("http").empty()) << collector.err();
  const std::vector<std::string> refused = {"",
                                            "Bearer wrong",
                                            "Bearer " + token.substr(0, token.size() - 1),
                                            "Bearer " + token + "0",
                                            "Basic " + token,
                                            token};
  const std::string http_message =
      "missing or wrong token; send the header 'Authorization: Bearer <token>'";
  for (const char* path : {"/v1/traces", "/v1/metrics", "/v1/logs"}) {
    for (const std::string& authorization : refused) {
      const std::string what = std::string(path) + " '" + authorization + "'";
      std::vector<std::string> headers{kJson};
      if (!authorization.empty()) headers.push_back("Authorization: " + authorization);
      HttpResult http = http_post(collector.url(path), "{}", headers);
      EXPECT_EQ(http.status, 401) << what;
      EXPECT_THAT(http.headers, ::testing::HasSubstr("WWW-Authenticate: Bearer\r\n")) << what;
      EXPECT_EQ(Json::parse(http.body), (Json{{"code", 16}, {"message", http_message}})) << what;
      headers[0] = kProtobuf;
      http = http_post(collector.url(path), "", headers);
      EXPECT_EQ(http.status, 401) << what;
      EXPECT_EQ(http.body, rpc_status_protobuf(16, http_message)) << what;
    }
  }
  const std::string grpc_message =
      "missing or wrong token; send the metadata 'authorization: Bearer <token>'";
  for (const char* service :
       {"trace.v1.TraceService", "metrics.v1.MetricsService", "logs.v1.LogsService"}) {
    for (const std::string& authorization : refused) {
      const grpc::Status status = grpc_raw_call(collector, service, "", authorization);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
          << service << " '" << authorization << "'";
      EXPECT_EQ(status.error_message(), grpc_message) << service;
    }
    // The right token (an empty request: valid, nothing to write).
    EXPECT_TRUE(grpc_raw_call(collector, service, "", "Bearer " + token).ok()) << service;
  }
  // The scheme is case-insensitive (RFC 7235).
  EXPECT_EQ(http_post(collector.url("/v1/traces"), trace_json("accepted"),
                      {kJson, "Authorization: bearer " + token})
                .status,
            200);

  EXPECT_EQ(collector.stop(), 0) << collector.err();
  const auto lines = read_lines(collector.out() / "traces.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(find_span(lines, "accepted"), nullptr);
  EXPECT_EQ(read_file(collector.out() / "metrics.jsonl"), "");
  EXPECT_EQ(read_file(collector.out() / "logs.jsonl"), "");
  EXPECT_THAT(collector.err(),
              ::testing::HasSubstr("(0 malformed, 54 unauthenticated, 0 dropped)"));
  EXPECT_EQ(collector.err().find(token), std::string::npos) << collector.err();
  EXPECT_EQ(collector.listening().find(token), std::string::npos) << collector.listening();
}

// The address of each listening TCP socket of process `pid` ("0100007F:10DD" for
// 127.0.0.1:4317, as /proc/net/tcp writes it; IPv4-mapped IPv6 addresses in the same form),
// sorted.
std::vector<std::string> listening_sockets(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(proc + "/fd", ec)) {
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<std::string> bound;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::istringstream in(read_file(proc + table));
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      // gRPC binds an IPv6 socket to the IPv4-mapped address (::ffff:127.0.0.1): the same.
      constexpr std::string_view kMapped = "0000000000000000FFFF0000";
      if (local.rfind(kMapped, 0) == 0) local = local.substr(kMapped.size());
      if (state == "0A" && inodes.count(inode) != 0) bound.push_back(local);  // 0A: LISTEN
    }
  }
  std::sort(bound.begin(), bound.end());
  return bound;
}

// Without --grpc and --http, `lens collect` listens on 127.0.0.1:4317 and 127.0.0.1:4318 and
// nowhere else: its listening sockets (from /proc) are bound to 127.0.0.1, and connecting to
// those ports on this machine's other IPv4 addresses is refused.
TEST(CollectTest, ListensOnLoopbackOnlyByDefault) {
  const auto dir = std::filesystem::path(::testing::TempDir()) /
                   ("lens-collect-default-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto out = dir / "out";
  int stdout_fd = -1;
  const pid_t pid = Collector::spawn({LENS_CLI_PATH, "collect", "--out", out.string()},
                                     dir / "stderr.txt", &stdout_fd);
  const std::string listening = Collector::read_line(stdout_fd);
  ::close(stdout_fd);
  if (listening.empty()) {
    const int code = Collector::wait_exit(pid);
    const std::string err = read_file(dir / "stderr.txt");
    // The defaults are fixed ports: another collector on this machine may hold them.
    if (code == 1 && err.find("the address is in use") != std::string::npos) {
      GTEST_SKIP() << "the default ports are taken: " << err;
    }
    FAIL() << "exit " << code << ": " << err;
  }
  EXPECT_EQ(listening,
            "lens collect: listening grpc=127.0.0.1:4317 http=127.0.0.1:4318 out=" + out.string());
  EXPECT_EQ(listening_sockets(pid), (std::vector<std::string>{"0100007F:10DD", "0100007F:10DE"}));

  ifaddrs* addresses = nullptr;
  ASSERT_EQ(::getifaddrs(&addresses), 0);
  int tried = 0;
  for (const ifaddrs* a = addresses; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    sockaddr_in address = *reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if ((ntohl(address.sin_addr.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text));
    for (const int port : {4317, 4318}) {
      address.sin_port = htons(static_cast<std::uint16_t>(port));
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      ASSERT_GE(fd, 0);
      const timeval two_seconds{2, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &two_seconds, sizeof(two_seconds));
      const int connected =
          ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
      const int error = errno;
      ::close(fd);
      EXPECT_EQ(connected, -1) << text << ":" << port;
      EXPECT_EQ(error, ECONNREFUSED) << text << ":" << port;
      ++tried;
    }
  }
  ::freeifaddrs(addresses);
  std::cout << "[ note ] connections refused on " << tried / 2
            << " non-loopback IPv4 address(es) of this machine\n";
  ::kill(pid, SIGTERM);
  EXPECT_EQ(Collector::wait_exit(pid), 0) << read_file(dir / "stderr.txt");
  std::filesystem::remove_all(dir);
}

// OTLP JSON whose shape does not match the schema (an object or a scalar where the OTLP JSON
// mapping has a list) is a malformed body like invalid JSON: 400 with a google.rpc.Status
// INVALID_ARGUMENT (3) naming the field, and nothing written. protobuf's JSON parser alone reads
// such a value as a one-element list, which used to be answered 200.
TEST(CollectTest, JsonOfTheWrongShapeIsRejected) {
  Collector collector;
  ASSERT_FALSE(collector.address("http").empty()) << collector.err();
  struct Case {
    const char* path;
    std::string body;
    std::string message;
  };
  const std::string traces = "cannot decode the body as an OTLP JSON ExportTraceServiceRequest: ";
  const std::string metrics =
      "cannot decode the body as an OTLP JSON ExportMetricsServiceRequest: ";
  const std::string logs = "cannot decode the body as an OTLP JSON ExportLogsServiceRequest: ";
  const std::vector<Case> cases = {
      {"/v1/metrics", R"({"resourceMetrics":{"a":1}})",
       metrics + "OTLP JSON: invalid resourceMetrics: expected an array, got object"},
      {"/v1/traces", R"({"resourceSpans":[{"scopeSpans":[{"spans":{"name":"x"}}]}]})",
       traces + "OTLP JSON: invalid resourceSpans[0].scopeSpans[0].spans: expected an array, "
                "got object"},
      {"/v1/traces",
       R"({"resourceSpans":[{"resource":{"attributes":{"key":"dl.rank","value":{"intValue":"1"}}}}]})",
       traces + "OTLP JSON: invalid resourceSpans[0].resource.attributes: expected an array, "
                "got object"},
      {"/v1/logs", R"({"resourceLogs":"x"})",
       logs + "OTLP JSON: invalid resourceLogs: expected an array, got string"},
      {"/v1/metrics",
       R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"histogram":{"dataPoints":[{"bucketCounts":"1"}]}}]}]}]})",
       metrics + "OTLP JSON: invalid "
                 "resourceMetrics[0].scopeMetrics[0].metrics[0].histogram.dataPoints[0]."
                 "bucketCounts: expected an array, got string"},
  };
  for (const Case& c : cases) {
    const HttpResult http = http_post(collector.url(c.path), c.body, {kJson});
    EXPECT_EQ(http.status, 400) << c.body;
    EXPECT_EQ(http.body, Json({{"code", 3}, {"message", c.message}}).dump()) << c.body;
  }
  // null is an unset field in the OTLP JSON mapping: an empty request, nothing to write.
  EXPECT_EQ(http_post(collector.url("/v1/metrics"), R"({"resourceMetrics":null})", {kJson}).status,
            200);
  // Still serving.
  EXPECT_EQ(http_post(collector.url("/v1/traces"), trace_json("after"), {kJson}).status, 200);
  EXPECT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_EQ(read_lines(collector.out() / "traces.jsonl").size(), 1u);
  EXPECT_EQ(read_file(collector.out() / "metrics.jsonl"), "");
  EXPECT_EQ(read_file(collector.out() / "logs.jsonl"), "");
  EXPECT_THAT(collector.err(), ::testing::HasSubstr("(5 malformed, 0 unauthenticated, 0 dropped)"));
}

// Garbage on both protocols: every answer is an error, and the collector keeps serving.
TEST(CollectTest, GarbageGetsErrorsAndServingGoesOn) {
  Collector collector;
  ASSERT_FALSE(collector.address("http").empty()) << collector.err();
  const std::string good = trace_request("good").SerializeAsString();
  // Truncated protobuf: a valid request cut in the middle.
  HttpResult http =
      http_post(collector.url("/v1/traces"), good.substr(0, good.size() / 2), {kProtobuf});
  EXPECT_EQ(http.status, 400);
  // JSON body sent as protobuf, protobuf sent as JSON.
  EXPECT_EQ(http_post(collector.url("/v1/traces"), trace_json("x"), {kProtobuf}).status, 400);
  EXPECT_EQ(http_post(collector.url("/v1/traces"), good, {kJson}).status, 400);
  // JSON of the wrong shape: an id that is not hex.
  std::string bad_hex = trace_json("x");
  bad_hex.replace(bad_hex.find(kTraceIdHex), kTraceIdHex.size(), std::string(32, 'z'));
  http = http_post(collector.url("/v1/traces"), bad_hex, {kJson});
  EXPECT_EQ(http.status, 400);
  EXPECT_THAT(Json::parse(http.body)["message"].get<std::string>(), ::testing::HasSubstr("hex"));
  // Oversized body (64 MiB + 1), sent whole.
  http = http_post(collector.url("/v1/traces"), std::string((64u << 20) + 1, 'x'), {kProtobuf});
  EXPECT_EQ(http.status, 413);
  // gRPC: garbage and a truncated message.
  EXPECT_EQ(grpc_raw_export(collector, "\xff\xff\xff").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(grpc_raw_export(collector, good.substr(0, good.size() - 3)).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // Still serving.
  EXPECT_EQ(http_post(collector.url("/v1/traces"), good, {kProtobuf}).status, 200);
  trace_v1::ExportTraceServiceResponse response;
  EXPECT_TRUE(grpc_export(collector, trace_request("after"), &response).ok());
  EXPECT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_EQ(read_lines(collector.out() / "traces.jsonl").size(), 2u);
  EXPECT_THAT(collector.err(), ::testing::HasSubstr("7 malformed"));
}

TEST(CollectTest, MaxBytesAnswersWithPartialSuccess) {
  Collector collector({"--max-bytes", "1"});
  ASSERT_FALSE(collector.address("grpc").empty()) << collector.err();

  trace_v1::ExportTraceServiceResponse response;
  const grpc::Status status = grpc_export(collector, trace_request("capped", 3), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.partial_success().rejected_spans(), 3);
  EXPECT_THAT(response.partial_success().error_message(), ::testing::HasSubstr("--max-bytes"));

  const HttpResult http = http_post(collector.url("/v1/traces"), trace_json("capped"), {kJson});
  ASSERT_EQ(http.status, 200) << http.body;
  const Json rejected = Json::parse(http.body)["partialSuccess"]["rejectedSpans"];
  EXPECT_TRUE(rejected == "1" || rejected == 1) << http.body;

  EXPECT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_EQ(read_file(collector.out() / "traces.jsonl"), "");
  EXPECT_THAT(collector.err(), ::testing::HasSubstr("4 items dropped"));
}

TEST(CollectTest, MetricsAndLogsLandInTheirFiles) {
  Collector collector;
  ASSERT_FALSE(collector.address("grpc").empty()) << collector.err();

  metrics_v1::ExportMetricsServiceRequest metrics;
  auto* rm = metrics.add_resource_metrics();
  auto* attr = rm->mutable_resource()->add_attributes();
  attr->set_key("rank");
  attr->mutable_value()->set_string_value("0");
  auto* metric = rm->add_scope_metrics()->add_metrics();
  metric->set_name("train.loss");
  for (double value : {2.5, 2.25}) {
    auto* point = metric->mutable_gauge()->add_data_points();
    point->set_time_unix_nano(1'700'000'000'000'000'000ull);
    point->set_as_double(value);
  }
  {
    grpc::ClientContext context;
    with_deadline(context);
    metrics_v1::ExportMetricsServiceResponse metrics_response;
    const auto stub = metrics_v1::MetricsService::NewStub(
        grpc::CreateChannel(collector.address("grpc"), grpc::InsecureChannelCredentials()));
    const grpc::Status status = stub->Export(&context, metrics, &metrics_response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }

  logs_v1::ExportLogsServiceRequest logs;
  auto* rl = logs.add_resource_logs();
  *rl->mutable_resource() = rm->resource();
  auto* sl = rl->add_scope_logs();
  for (const char* text : {"first", "second", "third"}) {
    auto* record = sl->add_log_records();
    record->set_time_unix_nano(1'700'000'000'000'000'000ull);
    record->mutable_body()->set_string_value(text);
    record->set_trace_id(kTraceId);
    record->set_span_id(kSpanId);
  }
  const HttpResult http =
      http_post(collector.url("/v1/logs"), logs.SerializeAsString(), {kProtobuf});
  ASSERT_EQ(http.status, 200) << http.body;

  EXPECT_EQ(collector.stop(), 0) << collector.err();
  const auto metric_lines = read_lines(collector.out() / "metrics.jsonl");
  ASSERT_EQ(metric_lines.size(), 1u);
  const Json& written_metric =
      metric_lines[0]["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][0];
  EXPECT_EQ(written_metric["name"], "train.loss");
  EXPECT_EQ(written_metric["gauge"]["dataPoints"].size(), 2u);
  const auto log_lines = read_lines(collector.out() / "logs.jsonl");
  ASSERT_EQ(log_lines.size(), 1u);
  const Json& records = log_lines[0]["resourceLogs"][0]["scopeLogs"][0]["logRecords"];
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1]["body"]["stringValue"], "second");
  EXPECT_EQ(records[1]["traceId"], kTraceIdHex);
  EXPECT_EQ(read_file(collector.out() / "traces.jsonl"), "");
  EXPECT_THAT(collector.err(), ::testing::HasSubstr("lens collect: rank 0: 0 spans, 2 points, "
                                                    "3 logs\n"));
}

TEST(CollectTest, StopsOnSigintAndAppendsOnRestart) {
  // Outlives both collectors (each removes its own directory).
  const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) /
                                    ("lens-collect-restart-" + std::to_string(::getpid()));
  std::filesystem::remove_all(out);
  for (int round = 0; round < 2; ++round) {
    Collector collector({"--out", out.string()});
    ASSERT_FALSE(collector.address("http").empty()) << collector.err();
    const HttpResult http = http_post(collector.url("/v1/traces"),
                                      trace_request("round").SerializeAsString(), {kProtobuf});
    EXPECT_EQ(http.status, 200);
    EXPECT_EQ(collector.stop(SIGINT), 0) << collector.err();
  }
  EXPECT_EQ(read_lines(out / "traces.jsonl").size(), 2u);
  std::filesystem::remove_all(out);
}

TEST(CollectTest, PortInUseFailsWithOneLine) {
  Collector first({"--grpc", "off"});
  ASSERT_THAT(first.listening(), ::testing::HasSubstr("grpc=off http=127.0.0.1:"));
  const std::string taken = first.address("http");
  int stdout_fd = -1;
  const auto err_path = first.out().parent_path() / "second-stderr.txt";
  const pid_t pid = Collector::spawn(
      {LENS_CLI_PATH, "collect", "--grpc", "off", "--http", taken, "--out", first.out().string()},
      err_path, &stdout_fd);
  EXPECT_EQ(Collector::wait_exit(pid), 1);
  ::close(stdout_fd);
  EXPECT_EQ(read_file(err_path), "lens collect: cannot listen for OTLP/HTTP on " + taken +
                                     " (--http): the address is in use or not on this machine\n");
  EXPECT_EQ(first.stop(), 0);
}

struct FlagCase {
  std::string name;
  std::vector<std::string> args;
  std::string err;
};

class CollectFlags : public ::testing::TestWithParam<FlagCase> {};

TEST_P(CollectFlags, ExitTwoWithOneLine) {
  const FlagCase& c = GetParam();
  std::vector<std::string> args{"collect"};
  args.insert(args.end(), c.args.begin(), c.args.end());
  const auto result = run_process(LENS_CLI_PATH, args, {});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, c.err);
}

const FlagCase kFlagCases[] = {
    {"UnknownOption",
     {"--port", "4317"},
     "lens: unknown option '--port' for 'lens collect'; accepted: --grpc, --grpc-max-connections, "
     "--grpc-max-streams, --help, --http, --http-max-connections-per-peer, "
     "--http-request-timeout, --max-bytes, --max-memory-in-flight, --max-request-items, "
     "--max-request-memory, --out, --tls-cert, --tls-client-ca, --tls-key, --token, "
     "--token-file\n"},
    {"MaxMemoryInFlightTooSmall",
     {"--max-memory-in-flight", "512K"},
     "lens: invalid value for --max-memory-in-flight: '512K'; accepted: a byte count >= 1M, "
     "optionally with suffix K, M or G (default 160M)\n"},
    {"HttpRequestTimeoutZero",
     {"--http-request-timeout", "0"},
     "lens: invalid value for --http-request-timeout: '0'; accepted: whole seconds, 1 to 86400 "
     "(default 60)\n"},
    {"PerPeerCapNotANumber",
     {"--http-max-connections-per-peer", "many"},
     "lens: invalid value for --http-max-connections-per-peer: 'many'; accepted: 1 to 1000000 "
     "(default 256)\n"},
    {"GrpcNoPort",
     {"--grpc", "localhost"},
     "lens: invalid value for --grpc: 'localhost'; accepted: HOST:PORT such as 127.0.0.1:4317 or "
     "[::1]:PORT (port 0 picks a free port), or off\n"},
    {"HttpPortTooLarge",
     {"--http", "127.0.0.1:70000"},
     "lens: invalid value for --http: '127.0.0.1:70000'; accepted: HOST:PORT such as "
     "127.0.0.1:4318 or [::1]:PORT (port 0 picks a free port), or off\n"},
    {"UnbracketedIpv6",
     {"--http", "::1:4318"},
     "lens: invalid value for --http: '::1:4318'; accepted: HOST:PORT such as 127.0.0.1:4318 or "
     "[::1]:PORT (port 0 picks a free port), or off\n"},
    {"BothOff",
     {"--grpc", "off", "--http", "off"},
     "lens: --grpc and --http are both off; accepted: at least one HOST:PORT\n"},
    {"NegativeMaxBytes",
     {"--max-bytes", "-5"},
     "lens: invalid value for --max-bytes: '-5'; accepted: a byte count >= 0, optionally with "
     "suffix K, M or G (0 = no cap)\n"},
    {"MaxBytesBadSuffix",
     {"--max-bytes=10T"},
     "lens: invalid value for --max-bytes: '10T'; accepted: a byte count >= 0, optionally with "
     "suffix K, M or G (0 = no cap)\n"},
    {"EmptyToken",
     {"--token="},
     "lens: invalid value for --token (value not shown); accepted: a non-empty token without "
     "spaces\n"},
    // The token is not echoed, even when it is invalid.
    {"TokenWithASpace",
     {"--token", "s3cret-PLANTED token"},
     "lens: invalid value for --token (value not shown); accepted: a non-empty token without "
     "spaces\n"},
    {"EmptyOut", {"--out", ""}, "lens: invalid value for --out: ''; accepted: a directory path\n"},
    {"TokenAndTokenFile",
     {"--token", "a", "--token-file", "/dev/null"},
     "lens: --token and --token-file are both given; accepted: one of them\n"},
    {"MissingTokenFile",
     {"--token-file", "/nonexistent/token"},
     "lens: cannot read --token-file '/nonexistent/token'; accepted: a readable file holding the "
     "token\n"},
    {"EmptyTokenFile",
     {"--token-file", "/dev/null"},
     "lens: invalid token in --token-file '/dev/null' (value not shown); accepted: a non-empty "
     "token without spaces\n"},
    {"MissingValue", {"--out"}, "lens: option '--out' of 'lens collect' needs a value\n"},
    {"Positional",
     {"now"},
     "lens: unexpected argument 'now' for 'lens collect'; see lens collect --help\n"},
};

INSTANTIATE_TEST_SUITE_P(Collect, CollectFlags, ::testing::ValuesIn(kFlagCases),
                         [](const auto& test_info) { return test_info.param.name; });

TEST(CollectFlagsHelp, PrintsUsage) {
  const auto result = run_process(LENS_CLI_PATH, {"collect", "--help"}, {});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.out, ::testing::StartsWith("usage: lens collect"));
  EXPECT_EQ(result.err, "");
}

}  // namespace
}  // namespace lens
