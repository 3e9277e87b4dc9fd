// Builds the exporter of a signal that its ExporterOptions name: OTLP over gRPC, HTTP/protobuf or
// HTTP/JSON (otlp_exporters.hpp), console JSON lines on stdout (console_json.hpp) or, with
// CONSOLE_FORMAT=text, short lines a person reads (console_text.hpp), one OTLP/JSON
// request per line in <file_path>/{traces,metrics,logs}.jsonl, or none (record, then discard —
// for overhead measurements). Every exporter's outcomes are counted in an ExportReport, and the
// metric exporters ask for the temporality of OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE.
// The only layer that does I/O. Thread-safety: the factories are stateless; the exporters'
// members may be called from any thread.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "export/export_report.hpp"
#include "export/signal_sdk.hpp"
#include "export/text_console.hpp"
#include "lens/config.hpp"
#include "lens/result.hpp"

namespace lens::exporters {

// What the exporter of one signal is built from (setup derives it from the config: see
// telemetry/plan.hpp).
struct ExporterOptions {
  ExporterKind kind = ExporterKind::otlp;
  ConsoleFormat console_format = ConsoleFormat::json;  // kind console
  // The metric temporality asked for (OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE).
  TemporalityPreference temporality = TemporalityPreference::cumulative;
  // Kind file: the directory, and the variable or flag that set it (for errors).
  std::string file_path;
  std::string file_path_label;
  // Kind otlp: this signal's settings (for metrics, bounded by OTEL_METRIC_EXPORT_TIMEOUT).
  OtlpSignalSettings otlp;
};

// The file of `signal` inside options.file_path: traces.jsonl, metrics.jsonl or logs.jsonl.
const char* file_name(Signal signal) noexcept;

// `report` counts every export's outcome and reports failures (one of its own when null).
template <Signal S>
Result<ExporterPtr<S>> make_exporter(const ExporterOptions& options,
                                     std::shared_ptr<ExportReport> report = nullptr);

// Writes each batch to `out` whole, under a lock, and flushes it.
template <Signal S>
ExporterPtr<S> make_console_exporter(
    std::FILE* out = stdout, TemporalityPreference temporality = TemporalityPreference::cumulative);

// Writes each batch as console_text.hpp's lines on `console`, the resource line when it changes;
// spans are indented by the depth their recordable was given (core/span_depth.hpp).
template <Signal S>
ExporterPtr<S> make_text_console_exporter(
    std::shared_ptr<TextConsole> console,
    TemporalityPreference temporality = TemporalityPreference::cumulative);

// Creates options.file_path (with its parents) and opens the signal's file for appending; the
// error names the variable that set the path, the path and the OS error. Each batch becomes one
// line in a single write(2) on an O_APPEND file, so rank processes sharing the directory never
// interleave lines; write failures later are failed exports, reported once on stderr.
template <Signal S>
Result<ExporterPtr<S>> make_file_exporter(const ExporterOptions& options);

// Accepts every batch and discards it (exporter=none).
template <Signal S>
ExporterPtr<S> make_discarding_exporter(
    TemporalityPreference temporality = TemporalityPreference::cumulative);

}  // namespace lens::exporters
