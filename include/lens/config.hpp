// The lens configuration model: every setting of docs/configuration.md, read from prefixed
// environment variables (P_KEY, then FALLBACK_KEY, then the default), the standard OTEL_*
// settings, and the CLI overlay of the Megatron integration.
//
// Parsing never stops a run: a malformed value is kept as a recorded problem (the field keeps
// its default) and is reported by lens::validate(), which setup calls only for an enabled
// config (docs/configuration.md, "Validation"). Only ENABLED itself must parse, since nothing else can be decided
// without it. Value type; from_env() is thread-safe given an immutable Env.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lens/env.hpp"
#include "lens/otel_settings.hpp"
#include "lens/result.hpp"

namespace lens {

inline constexpr std::string_view kDefaultPrefix = "NEMO_LENS";

// Where the records of every signal go (EXPORTER): OTLP, standard output, files, or nowhere.
enum class ExporterKind { otlp, console, file, none };
inline constexpr std::string_view kAcceptedExporters = "otlp, console, file, none";
std::string_view to_string(ExporterKind kind) noexcept;
// The kind a name in kAcceptedExporters means, in any case ("Console" is console); nullopt for
// any other text.
std::optional<ExporterKind> exporter_kind(std::string_view name) noexcept;

// How the console exporter writes (CONSOLE_FORMAT): JSON lines for tools, or short lines a
// person can read (see docs/exporters.md).
enum class ConsoleFormat { json, text };
inline constexpr std::string_view kAcceptedConsoleFormats = "json, text (any case)";
std::string_view to_string(ConsoleFormat format) noexcept;
// The format a name in kAcceptedConsoleFormats means, in any case; nullopt for any other text.
std::optional<ConsoleFormat> console_format(std::string_view name) noexcept;

// How long no training step may finish before each rank reports where it is (HANG_TIMEOUT; see
// docs/configuration.md and lens/step_progress.hpp): `automatic` waits max(10 x the median step,
// 60 s), `fixed` waits `seconds`, `off` never reports.
struct HangTimeout {
  enum class Mode { automatic, fixed, off };
  Mode mode = Mode::automatic;
  double seconds = 0.0;  // fixed only: > 0
};
inline constexpr std::string_view kAcceptedHangTimeouts =
    "auto, off, or a number of seconds > 0 such as 90 or 2.5";
// HANG_TIMEOUT's value: "auto", "off" (any case), or seconds; nullopt for any other text.
std::optional<HangTimeout> hang_timeout(std::string_view text) noexcept;

// Overrides from command-line flags (Megatron's --otel-* flags, `lens config`).
struct CliOverrides {
  bool otel_enabled = false;                // --otel-enabled: can only turn telemetry on
  std::optional<std::string> service_name;  // --otel-service-name NAME
  std::optional<std::string> span_groups;   // --otel-span-groups SPEC
};

struct Config {
  bool enabled = false;
  std::string service_name = "nemo";
  std::string rank_strategy = "single_rank";
  std::int64_t export_rank = -1;
  double export_sample_rate = 1.0;
  std::string sampling_strategy;  // "" = the SDK default sampler; "rank_aware"; or registered
  bool traces_enabled = true;
  bool metrics_enabled = true;
  bool logs_enabled = false;
  std::string span_groups = "default";
  ExporterKind exporter = ExporterKind::otlp;
  ConsoleFormat console_format = ConsoleFormat::json;
  // The bound on memory for finished native spans not yet exported, all threads together.
  std::int64_t span_buffer_mb = 64;
  std::string file_path = "./lens-telemetry/";
  HangTimeout hang_timeout;
  // Before the first step of a process that trains (HANG_STARTUP_TIMEOUT): automatic = 600 s.
  HangTimeout hang_startup_timeout;
  std::string run_id;   // empty: resolved at setup (docs/resources.md, "Run identification")
  std::string user_id;  // resource nemo.user.id
  std::string wandb_entity;
  std::string wandb_project;

  // The standard OTEL_* settings, parsed in one place.
  OtelSettings otel;

  // Where the configuration was read from.
  std::string prefix = std::string(kDefaultPrefix);
  std::string fallback_prefix;

  // For each field name above: "default", "env:NAME" or "cli:--flag". Missing = default.
  std::map<std::string, std::string, std::less<>> sources;
  // Values that did not parse, in evaluation order; reported by validate().
  std::vector<Error> problems;

  // Reads P_KEY, then FALLBACK_KEY, then the default, for every key; OTEL_* and WANDB_*
  // are read bare. Fails only when ENABLED does not parse (docs/configuration.md, "Validation").
  static Result<Config> from_env(std::string_view prefix = kDefaultPrefix,
                                 std::string_view fallback_prefix = {},
                                 const Env& env = Env::process());

  // Applies command-line overrides (they beat the environment) and records their sources.
  void apply(const CliOverrides& overrides);

  // "default", "env:NAME" or "cli:--flag" for a field name such as "export_rank".
  std::string source_of(std::string_view field) const;
  // What to call the field in an error message: the variable or flag that set it, or
  // "config.<field>" when it was set in code or left at its default.
  std::string label_of(std::string_view field) const;
};

// The names of the fields reported by `lens config`, in output order.
const std::vector<std::string>& config_field_names();

}  // namespace lens
