// Secrets stay out of every output lens has (issue 9, docs/security.md). Unique values are planted
// in OTEL_EXPORTER_OTLP_HEADERS and the per-signal header variables, in `lens collect`'s token, and
// in span attributes under the redaction keys (docs/security.md, "Redaction"); then every stream is
// driven and searched: `lens config` (json and text, valid, invalid and disabled configurations),
// setup errors, export failure diagnostics (unreachable, TLS with an untrusted CA, a wrong token
// over gRPC and HTTP), the console exporters on stdout, the file exporters' files, `lens collect`'s
// stdout, stderr and JSON line files, and `lens report`'s output and files. Also: attribute values
// over OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT in exported spans and log records. Loopback only; every
// wait is bounded.
#include <gtest/gtest.h>
#include <opentelemetry/metrics/sync_instruments.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "lens/groups.hpp"
#include "lens/log.hpp"
#include "lens/span.hpp"
#include "lens/strategies.hpp"
#include "lens/telemetry.hpp"
#include "support/run_process.hpp"
#include "unit/support/otlp_test_servers.hpp"
#include "unit/support/test_support.hpp"

namespace lens {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using test_servers::CapturedOutput;
using test_servers::CollectProcess;
using test_servers::TlsFiles;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr const char* kExportTimeout = "3000";
#else
constexpr const char* kExportTimeout = "500";
#endif

// Every planted value contains this; no output may.
const std::string& secret() {
  static const std::string value = "pl4nted-" + std::to_string(::getpid()) + "-9c1f";
  return value;
}
std::string token() { return secret() + "-token"; }

// The header variables, each with a value of its own, and `authorization` (a bearer token) in
// each of them.
Env::Map planted_headers(const std::string& authorization) {
  Env::Map variables;
  for (const std::string signal : {"", "TRACES_", "METRICS_", "LOGS_"}) {
    variables["OTEL_EXPORTER_OTLP_" + signal + "HEADERS"] =
        "x-api-key=" + secret() + "-" + (signal.empty() ? "general" : signal) +
        ",Authorization=Bearer%20" + authorization;
  }
  return variables;
}

// An exporting rank with traces, metrics and logs; `extra` adds or replaces.
Env::Map job_variables(const Env::Map& extra) {
  Env::Map variables = {
      {"NEMO_LENS_ENABLED", "true"},           {"NEMO_LENS_RUN_ID", "security-test"},
      {"NEMO_LENS_TRACES_ENABLED", "1"},       {"NEMO_LENS_METRICS_ENABLED", "1"},
      {"NEMO_LENS_LOGS_ENABLED", "1"},         {"OTEL_SERVICE_NAME", "security-test"},
      {"OTEL_BSP_SCHEDULE_DELAY", "50"},       {"OTEL_BLRP_SCHEDULE_DELAY", "50"},
      {"OTEL_METRIC_EXPORT_INTERVAL", "60000"}};
  for (const auto& [key, value] : planted_headers(secret() + "-wrong")) variables[key] = value;
  for (const auto& [key, value] : extra) variables[key] = value;
  return variables;
}

Result<TelemetryHandle> setup(const Env::Map& variables) {
  SetupOverrides overrides;
  overrides.env = Env::from(variables);
  return setup_telemetry(test_support::config_from(variables), test_support::rank_of(0, 1), {},
                         std::move(overrides));
}

// What a training step records: a span with every redaction key holding a secret (at start, through
// set_attribute and on an event), keys that are not redacted, a metric and a log record inside the
// span; then a linked span with a secret under a redaction key.
void record_step(TelemetryHandle& handle) {
  const std::string planted = secret() + "-attribute";
  const std::vector<std::string> list = {"in", "a list"};
  ASSERT_TRUE(setup_logging_bridge(log::Level::info));
  {
    ScopedSpan span("secure.step", {{"prompt", planted},
                                    {"input_text", planted},
                                    {"output_text", planted},
                                    {"text", planted},
                                    {"password", planted},
                                    {"Password", "case-sensitive"},
                                    {"megatron.iteration", 3},
                                    {"text.list", list}});
    span.set_attribute("token", planted);
    span.set_attribute("secret", planted);
    span.add_event("secure.event", {{"key", planted}, {"path", "/ckpt"}});
    handle.meter()->CreateUInt64Counter("lens.test.secure")->Add(1);
    log::emit(log::Level::warn, "secure log", {{"step", std::int64_t{3}}});
  }
  create_linked_span("secure.linked", nullptr, {{"token", planted}}).end();
  remove_logging_bridge();
}

const std::vector<std::string> kRedactedSpanKeys = {"prompt",   "input_text", "output_text", "text",
                                                    "password", "token",      "secret"};

// The span's attributes, from an OTLP JSON key/value list, as a flat object.
Json flat_attributes(const Json& list) {
  Json out = Json::object();
  for (const Json& item : list) {
    const Json& value = item.at("value");
    out[item.at("key").get<std::string>()] =
        value.contains("stringValue") ? value.at("stringValue") : value;
  }
  return out;
}

// Checks the "secure.step" span of OTLP JSON trace request lines: redacted where docs/security.md
// ("Redaction") says.
void expect_redacted_in_otlp(const std::vector<std::string>& lines, const std::string& where) {
  int found = 0;
  for (const std::string& line : lines) {
    const Json request = Json::parse(line);
    for (const Json& rs : request.at("resourceSpans")) {
      for (const Json& ss : rs.at("scopeSpans")) {
        for (const Json& span : ss.at("spans")) {
          if (span.at("name") != "secure.step") continue;
          ++found;
          const Json attributes = flat_attributes(span.at("attributes"));
          for (const std::string& key : kRedactedSpanKeys) {
            EXPECT_EQ(attributes.at(key), "[REDACTED]") << where << " " << key;
          }
          EXPECT_EQ(attributes.at("Password"), "case-sensitive") << where;
          EXPECT_EQ(attributes.at("megatron.iteration"), (Json{{"intValue", "3"}})) << where;
          const Json event = flat_attributes(span.at("events").at(0).at("attributes"));
          EXPECT_EQ(event.at("key"), "[REDACTED]") << where;
          EXPECT_EQ(event.at("path"), "/ckpt") << where;
        }
      }
    }
  }
  EXPECT_EQ(found, 1) << where;
}

void expect_no_secret(const std::string& text, const std::string& where) {
  EXPECT_EQ(text.find(secret()), std::string::npos) << where << ":\n" << text;
}

std::string lens_cli() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "lens").string();
}

// The output directory in a `lens collect` listening line (it runs to the end of the line).
std::filesystem::path collect_out(const CollectProcess& collector) {
  const std::string& line = collector.listening();
  return line.substr(line.find(" out=") + 5);
}

class Security : public ::testing::Test {
 protected:
  void SetUp() override {
    detail::reset_span_groups_for_testing();
    detail::reset_strategies_for_testing();
  }
  void TearDown() override {
    remove_logging_bridge();
    detail::reset_span_groups_for_testing();
    detail::reset_strategies_for_testing();
  }
};

// `lens config`, every format and prefix, with the headers planted: valid (header values shown
// as [REDACTED]), with a malformed header entry (exit 2, one line naming the variable), and
// disabled with a malformed entry (still exit 2).
TEST_F(Security, LensConfigNeverPrintsAPlantedSecret) {
  std::map<std::string, std::string> valid = {{"NEMO_LENS_ENABLED", "1"},
                                              {"MEGATRON_OTEL_ENABLED", "1"},
                                              {"LENS_COLLECT_TOKEN", token()},
                                              {"CUDA_VISIBLE_DEVICES", "0"}};
  for (const auto& [key, value] : planted_headers(token())) valid[key] = value;
  std::map<std::string, std::string> malformed = valid;
  malformed["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = "x-api-key=" + secret() + "," + secret();
  std::map<std::string, std::string> disabled = malformed;
  disabled["NEMO_LENS_ENABLED"] = "0";
  disabled["MEGATRON_OTEL_ENABLED"] = "0";
  const std::string malformed_line =
      "lens: Invalid entry in OTEL_EXPORTER_OTLP_TRACES_HEADERS: item 2 (value not shown) has no "
      "'='; accepted: key=value pairs separated by commas, values percent-encoded\n";
  for (const std::vector<std::string>& prefix :
       {std::vector<std::string>{}, std::vector<std::string>{"--prefix", "MEGATRON_OTEL"}}) {
    for (const char* format : {"json", "text"}) {
      std::vector<std::string> args = {"config", "--format", format};
      args.insert(args.end(), prefix.begin(), prefix.end());
      const std::string what = std::string(format) + (prefix.empty() ? "" : " MEGATRON_OTEL");

      auto result = testing::run_process(lens_cli(), args, valid, 30s);
      EXPECT_EQ(result.exit_code, 0) << what << ": " << result.err;
      expect_no_secret(result.out + result.err, "lens config " + what);
      EXPECT_NE(result.out.find("[REDACTED]"), std::string::npos) << what;
      if (std::string(format) == "json") {
        const Json out = Json::parse(result.out);
        for (const char* signal : {"traces", "metrics", "logs"}) {
          EXPECT_EQ(out.at("otel").at("exporter_otlp").at(signal).at("headers"),
                    (Json{{"authorization", "[REDACTED]"}, {"x-api-key", "[REDACTED]"}}))
              << what << " " << signal;
        }
      }

      for (const auto* env : {&malformed, &disabled}) {
        result = testing::run_process(lens_cli(), args, *env, 30s);
        EXPECT_EQ(result.exit_code, 2) << what;
        EXPECT_EQ(result.out, "") << what;
        EXPECT_EQ(result.err, malformed_line) << what;
      }
    }
  }
}

// Setup refuses a malformed header entry with a message that names the variable, not the value,
// and prints nothing.
TEST_F(Security, SetupErrorsNeverCarryAPlantedSecret) {
  for (const std::string signal : {"", "TRACES_", "METRICS_", "LOGS_"}) {
    const std::string variable = "OTEL_EXPORTER_OTLP_" + signal + "HEADERS";
    // Alone: a per-signal variable hides the general one, which is then not read at all.
    Env::Map variables = job_variables({{"NEMO_LENS_EXPORTER", "otlp"}});
    for (const auto& [key, value] : planted_headers("")) variables.erase(key);
    variables[variable] = "a=" + secret() + "," + secret();
    CapturedOutput output;
    auto made = setup(variables);
    const std::string text = output.text();
    if (made.ok()) static_cast<void>(made->shutdown(1000ms));
    ASSERT_FALSE(made.ok()) << variable;
    EXPECT_EQ(made.message(), "Invalid entry in " + variable +
                                  ": item 2 (value not shown) has no '='; accepted: key=value "
                                  "pairs separated by commas, values percent-encoded");
    EXPECT_EQ(text, "") << variable;
  }
}

// Console exporters (spans, metrics, log records on stdout) and file exporters (OTLP JSON line
// files): redacted values are "[REDACTED]", nothing carries a secret.
TEST_F(Security, ConsoleAndFileExportersNeverCarryAPlantedSecret) {
  {
    CapturedOutput output;
    auto made = setup(job_variables({{"NEMO_LENS_EXPORTER", "console"}}));
    ASSERT_TRUE(made.ok()) << made.message();
    record_step(*made);
    EXPECT_TRUE(made->shutdown(3000ms).ok());
    const std::string text = output.text();
    expect_no_secret(text, std::string("console"));
    int spans = 0;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("\"secure.step\"") == std::string::npos) continue;
      const Json span = Json::parse(line);
      ++spans;
      for (const std::string& key : kRedactedSpanKeys) {
        EXPECT_EQ(span.at("attributes").at(key), "[REDACTED]") << key;
      }
      EXPECT_EQ(span.at("attributes").at("Password"), "case-sensitive");
      EXPECT_EQ(span.at("attributes").at("text.list"), (Json{"in", "a list"}));
      EXPECT_EQ(span.at("events").at(0).at("attributes").at("key"), "[REDACTED]");
    }
    EXPECT_EQ(spans, 1) << text;
    EXPECT_NE(text.find("secure log"), std::string::npos) << text;
    EXPECT_NE(text.find("lens.test.secure"), std::string::npos) << text;
  }
  {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("lens-security-file-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    CapturedOutput output;
    auto made = setup(
        job_variables({{"NEMO_LENS_EXPORTER", "file"}, {"NEMO_LENS_FILE_PATH", dir.string()}}));
    ASSERT_TRUE(made.ok()) << made.message();
    record_step(*made);
    EXPECT_TRUE(made->shutdown(3000ms).ok());
    expect_no_secret(output.text(), std::string("file exporter output"));
    for (const char* file : {"traces.jsonl", "metrics.jsonl", "logs.jsonl"}) {
      const std::string content = test_servers::read_text(dir / file);
      EXPECT_FALSE(content.empty()) << file;
      expect_no_secret(content, file);
    }
    expect_redacted_in_otlp(test_servers::read_lines(dir / "traces.jsonl"), std::string("file"));
    EXPECT_NE(test_servers::read_text(dir / "logs.jsonl").find("secure log"), std::string::npos);
    std::filesystem::remove_all(dir);
  }
}

// OTLP export against `lens collect --token`, and everything downstream of it: failures (a wrong
// token over gRPC and HTTP, an unreachable endpoint, TLS with no CA and with the wrong CA) are
// reported without the headers; with the right token the data arrives redacted; `lens collect`'s
// own stdout and stderr and its files, and `lens report`'s output and files, carry no secret.
TEST_F(Security, CollectAndReportNeverCarryAPlantedSecret) {
  TlsFiles tls;
  ASSERT_TRUE(tls.ok()) << tls.error();
  CollectProcess collector({"--token", token()});
  CollectProcess with_tls(tls.collect_flags());
  ASSERT_FALSE(collector.listening().empty()) << collector.err();
  ASSERT_FALSE(with_tls.listening().empty()) << with_tls.err();

  struct Failure {
    const char* protocol;
    std::string endpoint;
    Env::Map extra;
    const char* expected;  // in the traces failure line
  };
  const std::vector<Failure> failures = {
      {"grpc", "http://" + collector.address("grpc"), {}, "UNAUTHENTICATED"},
      {"http/json", "http://" + collector.address("http"), {}, "HTTP 401"},
      {"http/protobuf",
       "http://127.0.0.1:" + std::to_string(test_servers::free_port()),
       {},
       "cannot connect"},
      {"grpc", "https://" + with_tls.address("grpc"), {}, "certificate verification failed"},
      {"http/json",
       "https://" + with_tls.address("http"),
       {{"OTEL_EXPORTER_OTLP_CERTIFICATE", tls.other_ca()}},
       "certificate verification failed"},
  };
  for (const Failure& f : failures) {
    Env::Map variables = job_variables({{"NEMO_LENS_EXPORTER", "otlp"},
                                        {"OTEL_EXPORTER_OTLP_PROTOCOL", f.protocol},
                                        {"OTEL_EXPORTER_OTLP_ENDPOINT", f.endpoint},
                                        {"OTEL_EXPORTER_OTLP_TIMEOUT", kExportTimeout}});
    for (const auto& [key, value] : f.extra) variables[key] = value;
    CapturedOutput output;
    auto made = setup(variables);
    ASSERT_TRUE(made.ok()) << made.message();
    record_step(*made);
    const Status shut = made->shutdown(3000ms);
    const TelemetryStats stats = made->stats();
    const std::string text = output.text();
    const std::string what = std::string(f.protocol) + " " + f.endpoint;
    // The final exports fail: shutdown says what it could not deliver, and nothing secret.
    EXPECT_TRUE(shut.ok() || shut.message().rfind("Telemetry shutdown could not deliver ", 0) == 0)
        << what << ": " << shut.message();
    EXPECT_EQ(shut.message().find(secret()), std::string::npos) << shut.message();
    EXPECT_GE(stats.exports_failed, 1u) << what;
    EXPECT_NE(text.find("lens: traces export to " + f.endpoint), std::string::npos) << text;
    EXPECT_NE(text.find(f.expected), std::string::npos) << what << ":\n" << text;
    EXPECT_NE(text.find("lens: metrics export to "), std::string::npos) << text;
    EXPECT_NE(text.find("lens: logs export to "), std::string::npos) << text;
    expect_no_secret(text, "export failure " + what);
  }

  // The right token, through the per-signal header variables, over both collectors' protocols.
  for (const auto& [protocol, listener] :
       std::vector<std::pair<std::string, std::string>>{{"grpc", "grpc"}, {"http/json", "http"}}) {
    Env::Map variables =
        job_variables({{"NEMO_LENS_EXPORTER", "otlp"},
                       {"OTEL_EXPORTER_OTLP_PROTOCOL", protocol},
                       {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://" + collector.address(listener)},
                       {"OTEL_EXPORTER_OTLP_TIMEOUT", "5000"}});
    for (const auto& [key, value] : planted_headers(token())) variables[key] = value;
    CapturedOutput output;
    auto made = setup(variables);
    ASSERT_TRUE(made.ok()) << made.message();
    record_step(*made);
    EXPECT_TRUE(made->shutdown(5000ms).ok());
    const TelemetryStats stats = made->stats();
    const std::string text = output.text();
    EXPECT_EQ(stats.exports_failed, 0u) << protocol << ":\n" << text;
    EXPECT_EQ(stats.log_records_exported, 1u) << protocol;
    expect_no_secret(text, "export to collect " + protocol);
  }

  const std::filesystem::path out = collect_out(collector);
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  ASSERT_EQ(with_tls.stop(), 0) << with_tls.err();
  expect_no_secret(collector.listening() + collector.err(), "lens collect stdout and stderr");
  expect_no_secret(with_tls.listening() + with_tls.err(), "lens collect (TLS) stdout and stderr");
  EXPECT_NE(collector.err().find(" unauthenticated, "), std::string::npos) << collector.err();
  for (const char* file : {"traces.jsonl", "metrics.jsonl", "logs.jsonl"}) {
    const std::string content = test_servers::read_text(out / file);
    EXPECT_FALSE(content.empty()) << file;
    expect_no_secret(content, std::string("lens collect ") + file);
  }
  // One "secure.step" per successful export (gRPC, then HTTP); check each.
  for (const std::string& line : collector.lines("traces.jsonl")) {
    if (line.find("secure.step") != std::string::npos) {
      expect_redacted_in_otlp({line}, "lens collect traces.jsonl");
    }
  }

  const auto report = testing::run_process(lens_cli(), {"report", out.string()},
                                           std::map<std::string, std::string>{}, 60s);
  EXPECT_EQ(report.exit_code, 0) << report.err;
  expect_no_secret(report.out + report.err, "lens report stdout and stderr");
  for (const char* file : {"report.html", "trace.json"}) {
    const std::string content = test_servers::read_text(out / file);
    EXPECT_FALSE(content.empty()) << file;
    expect_no_secret(content, std::string("lens report ") + file);
  }
}

// The number of characters of `text`, or -1 when it is not whole UTF-8 (a sequence cut short).
int code_points(const std::string& text) {
  int count = 0;
  for (std::size_t i = 0; i < text.size(); ++count) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
    if (i + length > text.size()) return -1;
    for (std::size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return -1;
    }
    i += length;
  }
  return count;
}

// The string value of `key` in an OTLP JSON attribute list.
std::string string_attribute(const Json& list, const std::string& key) {
  for (const Json& item : list) {
    if (item.at("key") == key) return item.at("value").at("stringValue");
  }
  ADD_FAILURE() << "no attribute " << key;
  return {};
}

// OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT=5: string values (alone, in arrays, on events) longer than 5
// characters are cut to 5 code points, never inside a UTF-8 sequence; shorter ones, numbers and
// the body of a log record are left alone. Redaction comes first, so a redacted value is cut too
// (docs/security.md, "Redaction").
TEST_F(Security, AttributeValuesOverTheLengthLimitAreTruncatedInExportedSpansAndLogs) {
  const std::string utf8 = "h\xc3\xa9llo w\xc3\xb6rld";  // "héllo wörld"
  const std::string cjk =
      "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86"
      "\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88";  // 8 characters, 3 bytes each
  const std::vector<std::string> list = {"abcdefgh", "xy"};
  const auto dir = std::filesystem::temp_directory_path() /
                   ("lens-security-limit-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto made = setup(job_variables({{"NEMO_LENS_EXPORTER", "file"},
                                   {"NEMO_LENS_FILE_PATH", dir.string()},
                                   {"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "5"}}));
  ASSERT_TRUE(made.ok()) << made.message();
  ASSERT_TRUE(setup_logging_bridge(log::Level::info));
  {
    ScopedSpan span("limited", {{"ascii", "abcdefghij"},
                                {"exact", "abcde"},
                                {"short", "abc"},
                                {"utf8", utf8},
                                {"cjk", cjk},
                                {"list", list},
                                {"number", std::int64_t{1234567890}},
                                {"password", "hunter2-is-long"}});
    span.add_event("limited.event", {{"path", "/checkpoints/step-10"}});
  }
  log::emit(log::Level::info, "a body longer than the limit",
            {{"ascii", std::string("abcdefghij")},
             {"exact", std::string("abcde")},
             {"utf8", utf8},
             {"cjk", cjk}});
  remove_logging_bridge();
  ASSERT_TRUE(made->shutdown(3000ms).ok());

  const auto trace_lines = test_servers::read_lines(dir / "traces.jsonl");
  ASSERT_EQ(trace_lines.size(), 1u);
  const Json span = Json::parse(trace_lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  const Json& attributes = span.at("attributes");
  EXPECT_EQ(string_attribute(attributes, "ascii"), "abcde");
  EXPECT_EQ(string_attribute(attributes, "exact"), "abcde");
  EXPECT_EQ(string_attribute(attributes, "short"), "abc");
  EXPECT_EQ(string_attribute(attributes, "utf8"), "h\xc3\xa9llo");
  EXPECT_EQ(string_attribute(attributes, "cjk"), cjk.substr(0, 15));
  EXPECT_EQ(string_attribute(attributes, "password"), "[REDA");
  for (const Json& item : attributes) {
    if (item.at("key") == "list") {
      EXPECT_EQ(item.at("value"),
                (Json{{"arrayValue",
                       {{"values", {{{"stringValue", "abcde"}}, {{"stringValue", "xy"}}}}}}}));
    }
    if (item.at("key") == "number") {
      EXPECT_EQ(item.at("value"), (Json{{"intValue", "1234567890"}}));
    }
  }
  EXPECT_EQ(string_attribute(span.at("events").at(0).at("attributes"), "path"), "/chec");

  const auto log_lines = test_servers::read_lines(dir / "logs.jsonl");
  ASSERT_EQ(log_lines.size(), 1u);
  const Json record = Json::parse(log_lines[0])["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
  EXPECT_EQ(record.at("body").at("stringValue"), "a body longer than the limit");
  EXPECT_EQ(string_attribute(record.at("attributes"), "ascii"), "abcde");
  EXPECT_EQ(string_attribute(record.at("attributes"), "exact"), "abcde");
  // Multi-byte values: cut to at most 5 characters, never inside a UTF-8 sequence (the exact
  // values are the next test's).
  for (const std::string key : {"utf8", "cjk"}) {
    const std::string value = string_attribute(record.at("attributes"), key);
    const std::string& original = key == "utf8" ? utf8 : cjk;
    EXPECT_EQ(original.compare(0, value.size(), value), 0) << key;
    EXPECT_GE(value.size(), 1u) << key;
    EXPECT_LE(code_points(value), 5) << key;
  }
  std::filesystem::remove_all(dir);
}

// The OpenTelemetry specification counts an attribute value's length in characters, as the span
// limits do (above: "héllo wörld" -> "héllo"); so do log records.
TEST_F(Security, LogRecordAttributeValuesAreCutToTheLimitInCharacters) {
  const std::string utf8 = "h\xc3\xa9llo w\xc3\xb6rld";  // "héllo wörld"
  const std::string cjk =
      "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x86"
      "\xe3\x82\xad\xe3\x82\xb9\xe3\x83\x88";
  const auto dir = std::filesystem::temp_directory_path() /
                   ("lens-security-log-limit-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto made = setup(job_variables({{"NEMO_LENS_EXPORTER", "file"},
                                   {"NEMO_LENS_FILE_PATH", dir.string()},
                                   {"NEMO_LENS_TRACES_ENABLED", "0"},
                                   {"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "5"}}));
  ASSERT_TRUE(made.ok()) << made.message();
  ASSERT_TRUE(setup_logging_bridge(log::Level::info));
  log::emit(log::Level::info, "limited", {{"utf8", utf8}, {"cjk", cjk}});
  remove_logging_bridge();
  ASSERT_TRUE(made->shutdown(3000ms).ok());
  const auto lines = test_servers::read_lines(dir / "logs.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  const Json record = Json::parse(lines[0])["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0];
  EXPECT_EQ(string_attribute(record.at("attributes"), "utf8"), "h\xc3\xa9llo");
  EXPECT_EQ(string_attribute(record.at("attributes"), "cjk"), cjk.substr(0, 15));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lens
