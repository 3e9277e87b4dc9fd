// Fuzz target: `lens report`'s reading of OTLP JSON line files and everything built on what it
// reads: read_telemetry_dir (file and line classification, OTLP JSON decoding, warnings),
// RunBuilder (ranks from dl.rank / rank, spans, training metric points, log counts), analyze
// (steps, phases, stragglers), summary_lines, write_perfetto and write_html.
// Input: up to four files separated by NUL bytes, written as traces.jsonl, metrics.jsonl,
// logs.jsonl (lens collect's names) and collector.json (the OpenTelemetry Collector file
// exporter's: any name, signals mixed).
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.hpp"
#include "report/analysis.hpp"
#include "report/html_writer.hpp"
#include "report/otlp_reader.hpp"
#include "report/perfetto_writer.hpp"
#include "report/run_builder.hpp"
#include "report/summary.hpp"

namespace {

namespace fs = std::filesystem;

constexpr const char* kNames[] = {"traces.jsonl", "metrics.jsonl", "logs.jsonl", "collector.json"};

// One directory per process (fork mode runs several), emptied before each input.
const fs::path& work_dir() {
  static const fs::path dir = [] {
    char name[] = "/tmp/lens-fuzz-report-XXXXXX";
    if (::mkdtemp(name) == nullptr) {
      lens::fuzz::fail("cannot create a temporary directory");
    }
    return fs::path(name);
  }();
  return dir;
}

std::size_t count_lines(std::string_view text) {
  std::size_t lines = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    ++lines;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return lines;
}

void run(std::string_view input) {
  const fs::path& dir = work_dir();
  for (const char* name : kNames) {
    std::error_code ignored;
    fs::remove(dir / name, ignored);
  }
  std::vector<std::string> parts = lens::fuzz::split(input, '\0');
  if (parts.size() > std::size(kNames)) {
    parts.resize(std::size(kNames));
  }
  std::size_t lines = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::ofstream(dir / kNames[i], std::ios::binary) << parts[i];
    lines += count_lines(parts[i]);
  }

  lens::report::RunBuilder builder;
  const auto read = lens::report::read_telemetry_dir(dir, builder);
  if (!read.ok()) {
    lens::fuzz::fail("a readable directory was refused: " + read.message());
  }
  if (read->files_seen != parts.size()) {
    lens::fuzz::fail("files_seen is " + std::to_string(read->files_seen) + ", not " +
                     std::to_string(parts.size()));
  }
  // Every line is a request, a warning or skipped; never more than one of them.
  if (read->requests + read->warnings.size() > lines) {
    lens::fuzz::fail(std::to_string(read->requests) + " requests and " +
                     std::to_string(read->warnings.size()) + " warnings from " +
                     std::to_string(lines) + " lines");
  }
  lens::report::RunData data = builder.take();
  if (data.ranks.empty()) {
    return;  // `lens report` stops here with "no rank in DIR"
  }
  const lens::report::RunAnalysis analysis = lens::report::analyze(std::move(data), {0.10, {}});
  const std::vector<std::string> summary = lens::report::summary_lines(analysis);
  std::ostringstream perfetto;
  lens::report::write_perfetto(analysis, perfetto);
  if (!nlohmann::json::accept(perfetto.str())) {
    lens::fuzz::fail("the Perfetto trace is not JSON");
  }
  lens::report::HtmlContext context;
  context.source_dir = dir.string();
  context.perfetto_path = "trace.json";
  context.summary_lines = summary;
  context.warnings = read->warnings;
  std::ostringstream html;
  lens::report::write_html(analysis, context, html);
  if (html.str().empty()) {
    lens::fuzz::fail("the HTML report is empty");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    run(lens::fuzz::as_text(data, size));
  } catch (const std::exception& e) {
    lens::fuzz::fail(std::string("exception escaped: ") + e.what());
  }
  return 0;
}
