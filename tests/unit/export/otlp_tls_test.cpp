// OTLP exporters over TLS and mTLS on the wire, against `lens collect --tls-cert --tls-key
// [--tls-client-ca]` with a CA the test makes: a trusted CA delivers over grpc, http/protobuf
// and http/json; a server certificate the client cannot verify fails at once with one clear
// line; client certificates for mTLS; the per-signal variables over the general ones;
// OTEL_EXPORTER_OTLP_INSECURE as the OTLP specification says; and the collector's TLS flags.
// Loopback only; every wait is bounded.
#include <gtest/gtest.h>
#include <opentelemetry/proto/collector/trace/v1/trace_service.pb.h>
#include <opentelemetry/sdk/instrumentationscope/instrumentation_scope.h>
#include <opentelemetry/sdk/resource/resource.h>
#include <opentelemetry/sdk/trace/exporter.h>

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "export/otlp_exporters.hpp"
#include "lens/env.hpp"
#include "lens/otel_settings.hpp"
#include "lens/otlp_json.hpp"
#include "lens/validate.hpp"
#include "unit/export/otlp_exporter_support.hpp"
#include "unit/support/otlp_test_servers.hpp"
#include "unit/support/test_support.hpp"

namespace lens::exporters {
namespace {

using lens::test_support::failure_of;

using test_servers::CollectProcess;
using test_servers::TlsFiles;
namespace sdktrace = opentelemetry::sdk::trace;
namespace trace_api = opentelemetry::trace;
namespace collector_trace = opentelemetry::proto::collector::trace::v1;
using opentelemetry::sdk::common::ExportResult;

using test_support::Captured;
using test_support::kFastRetry;
using test_support::settings_from;

// Exports one span named `name` (trace id 0x01.., span id 0x..07) and returns the result.
ExportResult export_span(sdktrace::SpanExporter& exporter, const std::string& name) {
  static constexpr std::array<std::uint8_t, 16> kTrace = {1, 2,  3,  4,  5,  6,  7,  8,
                                                          9, 10, 11, 12, 13, 14, 15, 16};
  static constexpr std::array<std::uint8_t, 8> kSpan = {0, 0, 0, 0, 0, 0, 0, 7};
  static const auto resource =
      opentelemetry::sdk::resource::Resource::Create({{"service.name", "tls-test"}});
  static const auto scope =
      opentelemetry::sdk::instrumentationscope::InstrumentationScope::Create("lens.tls");
  std::vector<std::unique_ptr<sdktrace::Recordable>> spans;
  spans.push_back(exporter.MakeRecordable());
  auto& span = *spans.back();
  span.SetIdentity(trace_api::SpanContext(trace_api::TraceId(kTrace), trace_api::SpanId(kSpan),
                                          trace_api::TraceFlags(1), false),
                   trace_api::SpanId());
  span.SetName(name);
  span.SetStartTime(opentelemetry::common::SystemTimestamp(std::chrono::nanoseconds(1000)));
  span.SetDuration(std::chrono::nanoseconds(500));
  span.SetResource(resource);
  span.SetInstrumentationScope(*scope);
  return exporter.Export(
      opentelemetry::nostd::span<std::unique_ptr<sdktrace::Recordable>>(spans.data(), 1));
}

// The span names in the collector's traces.jsonl, in order.
std::vector<std::string> received_names(const CollectProcess& collector) {
  std::vector<std::string> names;
  for (const std::string& line : collector.lines("traces.jsonl")) {
    collector_trace::ExportTraceServiceRequest request;
    EXPECT_TRUE(otlp_json::decode(line, request).ok()) << line;
    for (const auto& rs : request.resource_spans()) {
      for (const auto& ss : rs.scope_spans()) {
        for (const auto& span : ss.spans()) names.push_back(span.name());
      }
    }
  }
  return names;
}

struct Protocol {
  const char* name;      // OTEL_EXPORTER_OTLP_PROTOCOL
  const char* listener;  // "grpc" or "http" in the collector's listening line
};
const Protocol kProtocols[] = {{"grpc", "grpc"}, {"http/protobuf", "http"}, {"http/json", "http"}};

// "https://127.0.0.1:PORT" of the collector's listener for `protocol`.
std::string https_endpoint(const CollectProcess& collector, const Protocol& protocol,
                           const std::string& host = "127.0.0.1") {
  const std::string address = collector.address(protocol.listener);
  return "https://" + host + address.substr(address.rfind(':'));
}

class OtlpTls : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(tls_.ok()) << tls_.error(); }
  TlsFiles tls_;
};

TEST_F(OtlpTls, TheCaInCertificateDeliversOverEveryProtocol) {
  CollectProcess collector(tls_.collect_flags());
  ASSERT_NE(collector.listening().find(" tls=on "), std::string::npos) << collector.err();
  std::vector<std::string> sent;
  for (const Protocol& protocol : kProtocols) {
    // localhost is in the certificate's names too.
    for (const char* host : {"127.0.0.1", "localhost"}) {
      Captured captured;
      auto exporter = make_otlp_exporter<Signal::traces>(
          settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", protocol.name},
                         {"OTEL_EXPORTER_OTLP_ENDPOINT", https_endpoint(collector, protocol, host)},
                         {"OTEL_EXPORTER_OTLP_CERTIFICATE", tls_.ca()},
                         {"OTEL_EXPORTER_OTLP_TIMEOUT", "5000"}}),
          captured.report, kFastRetry);
      const std::string name = std::string(protocol.name) + "@" + host;
      EXPECT_EQ(export_span(*exporter, name), ExportResult::kSuccess) << name;
      EXPECT_TRUE(captured.lines.empty()) << name << ": " << captured.lines.front();
      EXPECT_EQ(captured.report->counts().items_exported, 1u) << name;
      sent.push_back(name);
    }
  }
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_EQ(received_names(collector), sent);
}

TEST_F(OtlpTls, AServerCertificateThatCannotBeVerifiedFailsOnceAndClearly) {
  CollectProcess collector(tls_.collect_flags());
  ASSERT_FALSE(collector.listening().empty()) << collector.err();
  for (const Protocol& protocol : kProtocols) {
    // Without a CA (the system's CAs do not know the test's), and with the wrong CA.
    for (const std::string& ca : {std::string(), tls_.other_ca()}) {
      Captured captured;
      Env::Map variables = {{"OTEL_EXPORTER_OTLP_PROTOCOL", protocol.name},
                            {"OTEL_EXPORTER_OTLP_ENDPOINT", https_endpoint(collector, protocol)},
                            {"OTEL_EXPORTER_OTLP_TIMEOUT", "5000"}};
      if (!ca.empty()) variables["OTEL_EXPORTER_OTLP_CERTIFICATE"] = ca;
      auto exporter =
          make_otlp_exporter<Signal::traces>(settings_from(variables), captured.report, kFastRetry);
      const std::string what = std::string(protocol.name) + (ca.empty() ? "" : " wrong CA");
      EXPECT_EQ(export_span(*exporter, "refused"), ExportResult::kFailure) << what;
      EXPECT_EQ(export_span(*exporter, "refused"), ExportResult::kFailure) << what;
      const ExportReportCounts counts = captured.report->counts();
      EXPECT_EQ(counts.exports_failed, 2u) << what;
      EXPECT_EQ(counts.items_failed, 2u) << what;
      EXPECT_EQ(counts.retries, 0u) << what;  // a certificate does not get better by waiting
      ASSERT_EQ(captured.lines.size(), 1u) << what;
      const std::string& line = captured.lines[0];
      const std::string target =
          (std::string(protocol.name) == "grpc")
              ? https_endpoint(collector, protocol) + " (grpc)"
              : https_endpoint(collector, protocol) + "/v1/traces (" + protocol.name + ")";
      EXPECT_EQ(line.rfind("lens: traces export to " + target +
                               " failed: TLS handshake failed: "
                               "certificate verification failed",
                           0),
                0u)
          << line;
      EXPECT_NE(line.find("OTEL_EXPORTER_OTLP_CERTIFICATE"), std::string::npos) << line;
      EXPECT_NE(line.find("1 spans dropped"), std::string::npos) << line;
    }
  }
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_TRUE(received_names(collector).empty());
}

TEST_F(OtlpTls, ACertificateForAnotherHostFailsVerification) {
  // 127.0.0.2 is loopback too, but not among the certificate's names.
  CollectProcess collector(tls_.collect_flags(), "127.0.0.2:0", "127.0.0.2:0");
  ASSERT_FALSE(collector.listening().empty()) << collector.err();
  for (const Protocol& protocol : kProtocols) {
    Captured captured;
    auto exporter = make_otlp_exporter<Signal::traces>(
        settings_from(
            {{"OTEL_EXPORTER_OTLP_PROTOCOL", protocol.name},
             {"OTEL_EXPORTER_OTLP_ENDPOINT", https_endpoint(collector, protocol, "127.0.0.2")},
             {"OTEL_EXPORTER_OTLP_CERTIFICATE", tls_.ca()},
             {"OTEL_EXPORTER_OTLP_TIMEOUT", "3000"}}),
        captured.report, kFastRetry);
    EXPECT_EQ(export_span(*exporter, "wrong-host"), ExportResult::kFailure) << protocol.name;
    EXPECT_EQ(captured.report->counts().retries, 0u) << protocol.name;
    ASSERT_EQ(captured.lines.size(), 1u) << protocol.name;
    EXPECT_NE(
        captured.lines[0].find("failed: TLS handshake failed: certificate verification failed"),
        std::string::npos)
        << captured.lines[0];
  }
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_TRUE(received_names(collector).empty());
}

TEST_F(OtlpTls, MutualTlsNeedsTheClientCertificate) {
  CollectProcess collector(tls_.collect_flags(/*mutual=*/true));
  ASSERT_NE(collector.listening().find(" tls=mtls "), std::string::npos) << collector.err();
  std::vector<std::string> sent;
  for (const Protocol& protocol : kProtocols) {
    {
      Captured captured;
      auto exporter = make_otlp_exporter<Signal::traces>(
          settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", protocol.name},
                         {"OTEL_EXPORTER_OTLP_ENDPOINT", https_endpoint(collector, protocol)},
                         {"OTEL_EXPORTER_OTLP_CERTIFICATE", tls_.ca()},
                         {"OTEL_EXPORTER_OTLP_CLIENT_KEY", tls_.client_key()},
                         {"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", tls_.client_certificate()},
                         {"OTEL_EXPORTER_OTLP_TIMEOUT", "5000"}}),
          captured.report, kFastRetry);
      EXPECT_EQ(export_span(*exporter, protocol.name), ExportResult::kSuccess) << protocol.name;
      EXPECT_TRUE(captured.lines.empty()) << protocol.name << ": " << captured.lines.front();
      sent.push_back(protocol.name);
    }
    {
      Captured captured;
      auto exporter = make_otlp_exporter<Signal::traces>(
          settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", protocol.name},
                         {"OTEL_EXPORTER_OTLP_ENDPOINT", https_endpoint(collector, protocol)},
                         {"OTEL_EXPORTER_OTLP_CERTIFICATE", tls_.ca()},
                         {"OTEL_EXPORTER_OTLP_TIMEOUT", "1000"}}),
          captured.report, kFastRetry);
      EXPECT_EQ(export_span(*exporter, "no-client-certificate"), ExportResult::kFailure)
          << protocol.name;
      EXPECT_EQ(captured.report->counts().exports_failed, 1u) << protocol.name;
      ASSERT_EQ(captured.lines.size(), 1u) << protocol.name;
      const std::string& line = captured.lines[0];
      EXPECT_NE(line.find(https_endpoint(collector, protocol)), std::string::npos) << line;
      // With TLS 1.3 the server refuses after the client's side of the handshake: the client
      // sees the refusal (a TLS failure, not retried), or only a closed connection (retried
      // as a network error), or, when the retries fill the timeout (a slow machine, a
      // sanitizer), a timeout before the connection was up. Which one wins is a race; each
      // says what to check.
      EXPECT_TRUE(line.find("failed: TLS handshake failed (") != std::string::npos ||
                  line.find("failed: gRPC status UNAVAILABLE (") != std::string::npos ||
                  line.find("failed: cannot connect or the connection broke (") !=
                      std::string::npos ||
                  line.find("failed: gRPC status DEADLINE_EXCEEDED (") != std::string::npos ||
                  line.find("failed: no answer before the timeout (") != std::string::npos)
          << line;
      EXPECT_NE(line.find("if the server requires a client certificate (mTLS), set "
                          "OTEL_EXPORTER_OTLP_CLIENT_KEY and "
                          "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"),
                std::string::npos)
          << line;
    }
  }
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_EQ(received_names(collector), sent);
}

// A TLS endpoint that accepts the TCP connection and never answers the handshake: the export
// ends at its timeout, and the line says the TLS connection was never established, over every
// protocol; with the client-certificate hint for a client without one, without it (it would
// suggest what is already set) for a client with one.
TEST_F(OtlpTls, ATimeoutBeforeTheHandshakeEndsSaysSoWithTheClientCertificateHint) {
  int port = 0;
  const int listener = test_servers::listen_on(0, &port);  // never accepts, never answers
  for (const bool client_certificate : {false, true}) {
    for (const Protocol& protocol : kProtocols) {
      Captured captured;
      Env::Map variables = {
          {"OTEL_EXPORTER_OTLP_PROTOCOL", protocol.name},
          {"OTEL_EXPORTER_OTLP_ENDPOINT", "https://127.0.0.1:" + std::to_string(port)},
          {"OTEL_EXPORTER_OTLP_CERTIFICATE", tls_.ca()},
          {"OTEL_EXPORTER_OTLP_TIMEOUT", "300"}};
      if (client_certificate) {
        variables["OTEL_EXPORTER_OTLP_CLIENT_KEY"] = tls_.client_key();
        variables["OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"] = tls_.client_certificate();
      }
      auto exporter =
          make_otlp_exporter<Signal::traces>(settings_from(variables), captured.report, kFastRetry);
      const std::string what =
          std::string(protocol.name) + (client_certificate ? " with" : " without");
      EXPECT_EQ(export_span(*exporter, "silent"), ExportResult::kFailure) << what;
      ASSERT_EQ(captured.lines.size(), 1u) << what;
      const std::string& line = captured.lines[0];
      EXPECT_NE(line.find(protocol.listener == std::string("grpc")
                              ? "failed: gRPC status DEADLINE_EXCEEDED ("
                              : "failed: no answer before the timeout ("),
                std::string::npos)
          << line;
      const std::string not_established =
          "; the TLS connection was not established before the timeout";
      const std::string hint =
          "; if the server requires a client certificate (mTLS), set "
          "OTEL_EXPORTER_OTLP_CLIENT_KEY and OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE";
      EXPECT_NE(line.find(client_certificate ? not_established : not_established + hint),
                std::string::npos)
          << line;
      if (client_certificate) {
        EXPECT_EQ(line.find(hint), std::string::npos) << line;
      }
    }
  }
  ::close(listener);
}

TEST_F(OtlpTls, PerSignalVariablesWinOverTheGeneralOnes) {
  CollectProcess collector(tls_.collect_flags(/*mutual=*/true));
  ASSERT_FALSE(collector.listening().empty()) << collector.err();
  for (const Protocol& protocol : kProtocols) {
    const std::string endpoint = https_endpoint(collector, protocol);
    // The traces CA and client files are right, the general ones wrong.
    {
      Captured captured;
      const OtlpSignalSettings settings = settings_from(
          {{"OTEL_EXPORTER_OTLP_PROTOCOL", protocol.name},
           {"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint},
           {"OTEL_EXPORTER_OTLP_CERTIFICATE", tls_.other_ca()},
           {"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", tls_.ca()},
           {"OTEL_EXPORTER_OTLP_CLIENT_KEY", tls_.server_key()},
           {"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", tls_.server_certificate()},
           {"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", tls_.client_key()},
           {"OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", tls_.client_certificate()}});
      auto exporter = make_otlp_exporter<Signal::traces>(settings, captured.report, kFastRetry);
      EXPECT_EQ(export_span(*exporter, "per-signal"), ExportResult::kSuccess) << protocol.name;
      EXPECT_TRUE(captured.lines.empty()) << protocol.name << ": " << captured.lines.front();
    }
    // The general CA is right, the traces one wrong.
    {
      Captured captured;
      const OtlpSignalSettings settings =
          settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", protocol.name},
                         {"OTEL_EXPORTER_OTLP_ENDPOINT", endpoint},
                         {"OTEL_EXPORTER_OTLP_CERTIFICATE", tls_.ca()},
                         {"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", tls_.other_ca()},
                         {"OTEL_EXPORTER_OTLP_CLIENT_KEY", tls_.client_key()},
                         {"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", tls_.client_certificate()}});
      auto exporter = make_otlp_exporter<Signal::traces>(settings, captured.report, kFastRetry);
      EXPECT_EQ(export_span(*exporter, "wrong-per-signal-ca"), ExportResult::kFailure)
          << protocol.name;
      ASSERT_EQ(captured.lines.size(), 1u) << protocol.name;
      EXPECT_NE(captured.lines[0].find("certificate verification failed"), std::string::npos)
          << captured.lines[0];
    }
  }
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_EQ(received_names(collector),
            (std::vector<std::string>{"per-signal", "per-signal", "per-signal"}));
}

// What the settings parser gives for a gRPC endpoint, set here directly:
// OTEL_EXPORTER_OTLP_INSECURE only matters for an endpoint without a scheme.
OtlpSignalSettings grpc_settings(const std::string& endpoint, bool insecure,
                                 const std::string& ca = "") {
  OtlpSignalSettings settings;
  settings.endpoint = {endpoint, "env:OTEL_EXPORTER_OTLP_ENDPOINT"};
  settings.insecure = {insecure, "env:OTEL_EXPORTER_OTLP_INSECURE"};
  settings.certificate = {ca, ca.empty() ? "default" : "env:OTEL_EXPORTER_OTLP_CERTIFICATE"};
  settings.timeout_ms = {3000, "env:OTEL_EXPORTER_OTLP_TIMEOUT"};
  return settings;
}

TEST_F(OtlpTls, InsecureAppliesToGrpcEndpointsWithoutAScheme) {
  CollectProcess plain;
  CollectProcess secure(tls_.collect_flags());
  ASSERT_FALSE(plain.listening().empty()) << plain.err();
  ASSERT_FALSE(secure.listening().empty()) << secure.err();
  const std::string plain_address = plain.address("grpc");
  const std::string secure_address = secure.address("grpc");
  struct Case {
    std::string name;
    OtlpSignalSettings settings;
    bool delivered_plain;  // which collector gets it
  };
  const std::vector<Case> cases = {
      // host:port with INSECURE=true: plain text.
      {"no-scheme-insecure", grpc_settings(plain_address, true), true},
      // host:port with INSECURE=false (the default): TLS.
      {"no-scheme-secure", grpc_settings(secure_address, false, tls_.ca()), false},
      // A scheme wins over INSECURE both ways.
      {"https-insecure", grpc_settings("https://" + secure_address, true, tls_.ca()), false},
      {"http-secure", grpc_settings("http://" + plain_address, false), true},
  };
  for (const Case& c : cases) {
    Captured captured;
    auto exporter = make_otlp_exporter<Signal::traces>(c.settings, captured.report, kFastRetry);
    EXPECT_EQ(export_span(*exporter, c.name), ExportResult::kSuccess) << c.name;
    EXPECT_TRUE(captured.lines.empty()) << c.name << ": " << captured.lines.front();
  }
  // TLS by default without a scheme: a plain-text receiver is not spoken to in plain text.
  {
    Captured captured;
    auto exporter = make_otlp_exporter<Signal::traces>(
        grpc_settings(plain_address, false, tls_.ca()), captured.report, kFastRetry);
    EXPECT_EQ(export_span(*exporter, "tls-to-plain"), ExportResult::kFailure);
    ASSERT_EQ(captured.lines.size(), 1u);
    EXPECT_NE(captured.lines[0].find(plain_address + " (grpc) failed"), std::string::npos)
        << captured.lines[0];
  }
  ASSERT_EQ(plain.stop(), 0) << plain.err();
  ASSERT_EQ(secure.stop(), 0) << secure.err();
  EXPECT_EQ(received_names(plain), (std::vector<std::string>{"no-scheme-insecure", "http-secure"}));
  EXPECT_EQ(received_names(secure),
            (std::vector<std::string>{"no-scheme-secure", "https-insecure"}));
}

TEST_F(OtlpTls, InsecureSkipsVerificationOverHttp) {
  CollectProcess collector(tls_.collect_flags());
  ASSERT_FALSE(collector.listening().empty()) << collector.err();
  Captured captured;
  auto exporter = make_otlp_exporter<Signal::traces>(
      settings_from({{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                     {"OTEL_EXPORTER_OTLP_ENDPOINT", https_endpoint(collector, kProtocols[1])},
                     {"OTEL_EXPORTER_OTLP_INSECURE", "true"}}),
      captured.report, kFastRetry);
  EXPECT_EQ(export_span(*exporter, "unverified"), ExportResult::kSuccess);
  EXPECT_TRUE(captured.lines.empty()) << captured.lines.front();
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_EQ(received_names(collector), std::vector<std::string>{"unverified"});
}

TEST_F(OtlpTls, AClientKeyWithoutItsCertificateIsRefusedAtSetup) {
  const Status status = check_otlp_settings(
      settings_from({{"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", tls_.client_key()}}), Signal::traces);
  ASSERT_EQ(failure_of(status),
            "Client TLS files must come in pairs: OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY='" +
                tls_.client_key() +
                "' is set but OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE (or its general form) "
                "is not; accepted: both a client key and a client certificate (mTLS), or neither");
  EXPECT_TRUE(
      check_otlp_settings(
          settings_from({{"OTEL_EXPORTER_OTLP_CLIENT_KEY", tls_.client_key()},
                         {"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", tls_.client_certificate()}}),
          Signal::metrics)
          .ok());
}

// `lens collect` with bad TLS flags: exit status and its one stderr line.
struct CollectRun {
  int status = 0;
  std::string err;
};
CollectRun run_collect(const std::vector<std::string>& flags) {
  CollectProcess collector(flags);
  EXPECT_TRUE(collector.listening().empty()) << collector.listening();
  CollectRun run;
  run.status = collector.stop();
  run.err = collector.err();
  return run;
}

TEST_F(OtlpTls, CollectRefusesUnusableTlsFlags) {
  const std::string missing = (tls_.dir() / "missing.pem").string();
  const std::string not_pem = (tls_.dir() / "server.ext").string();
  struct Case {
    std::vector<std::string> flags;
    int status;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"--tls-cert", tls_.server_certificate()},
       2,
       "lens: --tls-cert is given without --tls-key; accepted: both (a PEM certificate and its "
       "private key), or neither\n"},
      {{"--tls-client-ca", tls_.ca()},
       2,
       "lens: --tls-client-ca is given without --tls-cert and --tls-key; accepted: client "
       "certificates only over TLS\n"},
      {{"--tls-cert", missing, "--tls-key", tls_.server_key()},
       2,
       "lens: cannot read --tls-cert '" + missing +
           "' (No such file or directory); accepted: a readable PEM file\n"},
      {{"--tls-cert", tls_.server_certificate(), "--tls-key", not_pem},
       2,
       "lens: invalid file for --tls-key: '" + not_pem +
           "' holds no PEM PRIVATE KEY; accepted: a PEM file with a '-----BEGIN ... PRIVATE "
           "KEY-----' block\n"},
      {{"--tls-cert", tls_.server_certificate(), "--tls-key", tls_.client_key()},
       1,
       "lens collect: cannot use the TLS certificate and key (--tls-cert, --tls-key): OpenSSL "
       "could not load them, or the key is not the certificate's\n"},
  };
  for (const Case& c : cases) {
    const CollectRun run = run_collect(c.flags);
    EXPECT_EQ(run.status, c.status) << c.err;
    EXPECT_EQ(run.err, c.err);
  }
}

}  // namespace
}  // namespace lens::exporters
