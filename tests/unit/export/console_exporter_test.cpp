// exporter=console for traces: one JSON object per span per line, keys and shapes of
// docs/exporters.md ("Console"), decoded here by an independent JSON parser.
#include <gtest/gtest.h>
#include <opentelemetry/sdk/trace/simple_processor.h>
#include <opentelemetry/sdk/trace/tracer_provider.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "export/exporters.hpp"

namespace lens {
namespace {

namespace sdktrace = opentelemetry::sdk::trace;
using Json = nlohmann::ordered_json;

std::vector<std::string> lines_of(std::FILE* file) {
  std::rewind(file);
  std::vector<std::string> lines;
  char buffer[8192];
  std::string current;
  while (std::fgets(buffer, sizeof(buffer), file) != nullptr) {
    current += buffer;
    if (!current.empty() && current.back() == '\n') {
      lines.push_back(current);
      current.clear();
    }
  }
  EXPECT_TRUE(current.empty()) << "unterminated line: " << current;
  return lines;
}

TEST(ConsoleSpanExporterTest, OneCompactJsonObjectPerSpanWithTheOriginalKeys) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    auto processor = std::make_unique<sdktrace::SimpleSpanProcessor>(
        exporters::make_console_exporter<Signal::traces>(out));
    auto provider = std::make_shared<sdktrace::TracerProvider>(std::move(processor));
    auto tracer = provider->GetTracer("nemo.lens");
    auto parent = tracer->StartSpan("megatron.train");
    {
      auto scope = tracer->WithActiveSpan(parent);
      auto child = tracer->StartSpan("megatron.train_step");
      child->SetAttribute("megatron.iteration", 7);
      child->SetAttribute("megatron.loss", 2.5);
      child->AddEvent("checkpoint", {{"path", "/ckpt"}});
      child->SetStatus(opentelemetry::trace::StatusCode::kError, "out of memory");
      child->End();
    }
    parent->End();
    provider->Shutdown();
  }
  const auto lines = lines_of(out);
  std::fclose(out);
  ASSERT_EQ(lines.size(), 2U);
  for (const auto& line : lines) {
    EXPECT_EQ(line.find('\n'), line.size() - 1) << "exactly one newline, at the end";
  }
  const Json child = Json::parse(lines[0]);
  const Json parent = Json::parse(lines[1]);
  std::vector<std::string> keys;
  for (const auto& [key, value] : child.items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"name", "context", "kind", "parent_id", "start_time",
                                            "end_time", "status", "attributes", "events", "links",
                                            "resource"}));
  EXPECT_EQ(child["name"], "megatron.train_step");
  EXPECT_EQ(parent["name"], "megatron.train");
  EXPECT_EQ(child["kind"], "SpanKind.INTERNAL");
  EXPECT_EQ(child["parent_id"], parent["context"]["span_id"]);
  EXPECT_TRUE(parent["parent_id"].is_null());
  EXPECT_EQ(child["context"]["trace_id"], parent["context"]["trace_id"]);
  const std::string trace_id = child["context"]["trace_id"];
  EXPECT_EQ(trace_id.size(), 34U);
  EXPECT_EQ(trace_id.substr(0, 2), "0x");
  EXPECT_EQ(std::string(child["context"]["span_id"]).size(), 18U);
  EXPECT_EQ(child["context"]["trace_state"], "[]");
  EXPECT_EQ(child["attributes"]["megatron.iteration"], 7);
  EXPECT_EQ(child["attributes"]["megatron.loss"], 2.5);
  EXPECT_EQ(child["status"]["status_code"], "ERROR");
  EXPECT_EQ(child["status"]["description"], "out of memory");
  EXPECT_EQ(parent["status"], (Json{{"status_code", "UNSET"}}));
  ASSERT_EQ(child["events"].size(), 1U);
  EXPECT_EQ(child["events"][0]["name"], "checkpoint");
  EXPECT_EQ(child["events"][0]["attributes"]["path"], "/ckpt");
  EXPECT_TRUE(child["links"].empty());
  EXPECT_TRUE(child["resource"]["attributes"].contains("telemetry.sdk.language"));
  const std::string start = child["start_time"];
  ASSERT_EQ(start.size(), 27U);  // 2026-08-12T10:11:12.123456Z
  EXPECT_EQ(start[10], 'T');
  EXPECT_EQ(start[19], '.');
  EXPECT_EQ(start.back(), 'Z');
  EXPECT_LE(std::string(child["start_time"]), std::string(child["end_time"]));
}

}  // namespace
}  // namespace lens
