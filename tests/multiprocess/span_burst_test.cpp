// lens_span_burst --otlp-endpoint: the burst reaches a real `lens collect` on loopback, over gRPC
// and OTLP/HTTP, and the line it prints counts what was exported. Without the flag nothing is
// sent (exporter=none), so a load test that forgets it sees exporter=none in that line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "support/run_process.hpp"
#include "unit/support/otlp_test_servers.hpp"

namespace {

using lens::test_servers::CollectProcess;

// Spans in the collector's traces.jsonl (one OTLP/JSON request per line).
std::size_t spans_in(const std::vector<std::string>& lines) {
  std::size_t spans = 0;
  for (const std::string& line : lines) {
    const auto request = nlohmann::json::parse(line);
    for (const auto& rs : request["resourceSpans"]) {
      for (const auto& ss : rs["scopeSpans"]) spans += ss["spans"].size();
    }
  }
  return spans;
}

class SpanBurstExport : public ::testing::TestWithParam<const char*> {};

TEST_P(SpanBurstExport, DeliversEveryProducedSpanToALoopbackCollector) {
  const std::string protocol = GetParam();
  CollectProcess collector;
  ASSERT_FALSE(collector.address("grpc").empty()) << collector.err();
  const std::string endpoint = "http://" + collector.address(protocol == "grpc" ? "grpc" : "http");
  const auto result = lens::testing::run_process(
      LENS_SPAN_BURST_PATH,
      {"--spans", "3000", "--otlp-endpoint", endpoint, "--otlp-protocol", protocol}, std::nullopt,
      std::chrono::seconds(30));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find(" exporter=otlp:" + protocol + ":" + endpoint + " "), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find(" ended=3000 exported=3000 lost=0 failed=0 "), std::string::npos)
      << result.out;
  ASSERT_EQ(collector.stop(), 0) << collector.err();
  EXPECT_EQ(spans_in(collector.lines("traces.jsonl")), 3000u);
}

INSTANTIATE_TEST_SUITE_P(Protocols, SpanBurstExport, ::testing::Values("grpc", "http/protobuf"),
                         [](const ::testing::TestParamInfo<const char*>& param_info) {
                           return std::string(param_info.param) == "grpc" ? "grpc"
                                                                          : "http_protobuf";
                         });

TEST(SpanBurstFlags, AnUnknownProtocolIsRefusedWithWhatIsAccepted) {
  const auto result = lens::testing::run_process(
      LENS_SPAN_BURST_PATH, {"--otlp-endpoint", "http://127.0.0.1:1", "--otlp-protocol", "udp"},
      std::nullopt, std::chrono::seconds(10));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "lens_span_burst: --otlp-protocol: 'udp' is not accepted; accepted: grpc, "
            "http/protobuf, http/json\n");
}

}  // namespace
