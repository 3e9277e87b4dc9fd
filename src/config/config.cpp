// Config::from_env: the prefix/fallback lookup of docs/configuration.md, "Prefixes and lookup", the
// compatibility aliases with their conflict rule, and the CLI overlay.
#include "lens/config.hpp"

#include <iterator>
#include <string>
#include <vector>

#include "core/parse.hpp"

namespace lens {
namespace {

using detail::trim;

// One value read from the environment, with the variable that held it.
struct Found {
  std::string value;     // trimmed
  std::string variable;  // empty when nothing was set
  explicit operator bool() const { return !variable.empty(); }
};

class Reader {
 public:
  Reader(std::string_view prefix, std::string_view fallback, const Env& env)
      : prefix_(prefix), fallback_(fallback), env_(env) {}

  // P_KEY, then FALLBACK_KEY; a blank value counts as unset.
  Found read(std::string_view key) const {
    for (const std::string& level : levels()) {
      if (Found found = read_level(level, key)) {
        return found;
      }
    }
    return {};
  }

  // One prefix level only.
  Found read_level(std::string_view level, std::string_view key) const {
    const std::string name = std::string(level) + "_" + std::string(key);
    const std::string value(trim(env_.get_or(name)));
    if (value.empty()) {
      return {};
    }
    return {value, name};
  }

  // The prefix, then the fallback prefix when there is one.
  std::vector<std::string> levels() const {
    if (fallback_.empty()) return {prefix_};
    return {prefix_, fallback_};
  }

 private:
  std::string prefix_;
  std::string fallback_;
  const Env& env_;
};

constexpr std::string_view kAcceptedBooleans = "1, true, yes, on / 0, false, no, off (any case)";

// The one wording for a value that does not parse, naming the variable that held it.
Error invalid_value(std::string_view kind, const std::string& variable, const std::string& value,
                    std::string_view accepted) {
  return Error("Invalid " + std::string(kind) + " for " + variable + ": " + detail::quoted(value) +
               "; accepted: " + std::string(accepted));
}

Error invalid_boolean(const std::string& variable, const std::string& value) {
  return invalid_value("boolean", variable, value, kAcceptedBooleans);
}

// Reads a key with `parse` (text -> optional value); a malformed value is a recorded problem
// naming the variable, the `kind` of value and what is `accepted`, and the default is kept.
template <typename T, typename Parse>
void read_parsed(const Reader& reader, std::string_view key, std::string_view field, T& out,
                 Config& config, Parse parse, std::string_view kind, std::string_view accepted) {
  const Found found = reader.read(key);
  if (!found) {
    return;
  }
  if (auto parsed = parse(found.value)) {
    out = *parsed;
    config.sources[std::string(field)] = "env:" + found.variable;
    return;
  }
  config.problems.push_back(invalid_value(kind, found.variable, found.value, accepted));
}

void read_bool(const Reader& reader, std::string_view key, std::string_view field, bool& out,
               Config& config) {
  read_parsed(reader, key, field, out, config, detail::parse_bool, "boolean", kAcceptedBooleans);
}

void read_int64(const Reader& reader, std::string_view key, std::string_view field,
                std::int64_t& out, Config& config, std::string_view accepted) {
  read_parsed(reader, key, field, out, config, detail::parse_int64, "integer", accepted);
}

void read_string(const Reader& reader, std::string_view key, std::string_view field,
                 std::string& out, Config& config) {
  if (const Found found = reader.read(key)) {
    out = found.value;
    config.sources[std::string(field)] = "env:" + found.variable;
  }
}

// RANK_STRATEGY with its alias EXPORT_STRATEGY: the first prefix level holding either wins;
// within a level both set and different is a conflict (docs/configuration.md, "lens variables").
void read_rank_strategy(const Reader& reader, Config& config) {
  for (const std::string& level : reader.levels()) {
    const Found primary = reader.read_level(level, "RANK_STRATEGY");
    const Found alias = reader.read_level(level, "EXPORT_STRATEGY");
    if (primary && alias && primary.value != alias.value) {
      config.problems.emplace_back(
          "Conflicting settings: " + primary.variable + "=" + detail::quoted(primary.value) +
          " and " + alias.variable + "=" + detail::quoted(alias.value) + "; " + alias.variable +
          " is an alias of " + primary.variable + ", set only one of them");
    }
    const Found& chosen = primary ? primary : alias;
    if (chosen) {
      config.rank_strategy = chosen.value;
      config.sources["rank_strategy"] = "env:" + chosen.variable;
      return;
    }
  }
}

// SAMPLING_STRATEGY with the legacy SAMPLER_ENABLED (1 = rank_aware, 0 = none).
void read_sampling_strategy(const Reader& reader, Config& config) {
  for (const std::string& level : reader.levels()) {
    const Found primary = reader.read_level(level, "SAMPLING_STRATEGY");
    const Found legacy = reader.read_level(level, "SAMPLER_ENABLED");
    std::optional<std::string> legacy_strategy;
    if (legacy) {
      if (auto parsed = detail::parse_bool(legacy.value)) {
        legacy_strategy = *parsed ? "rank_aware" : "";
      } else {
        config.problems.push_back(invalid_boolean(legacy.variable, legacy.value));
      }
    }
    if (primary && legacy_strategy && primary.value != *legacy_strategy) {
      config.problems.emplace_back(
          "Conflicting settings: " + primary.variable + "=" + detail::quoted(primary.value) +
          " and " + legacy.variable + "=" + detail::quoted(legacy.value) + "; " + legacy.variable +
          "=1 means " + primary.variable + "=rank_aware and " + legacy.variable +
          "=0 means no sampling strategy, set only one of them");
    }
    if (primary) {
      config.sampling_strategy = primary.value;
      config.sources["sampling_strategy"] = "env:" + primary.variable;
      return;
    }
    if (legacy_strategy) {
      config.sampling_strategy = *legacy_strategy;
      config.sources["sampling_strategy"] = "env:" + legacy.variable;
      return;
    }
    if (legacy) {
      return;  // malformed legacy value at this level: recorded above, keep the default
    }
  }
}

}  // namespace

namespace {
constexpr std::string_view kExporterNames[] = {"otlp", "console", "file", "none"};
constexpr std::string_view kConsoleFormatNames[] = {"json", "text"};

// Any case, as for every closed set of words lens reads (booleans, protocols, samplers).
bool same_ignoring_case(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c =
        text[i] >= 'A' && text[i] <= 'Z' ? static_cast<char>(text[i] - 'A' + 'a') : text[i];
    if (c != lower[i]) return false;
  }
  return true;
}
}  // namespace

std::string_view to_string(ExporterKind kind) noexcept {
  return kExporterNames[static_cast<int>(kind)];
}

std::optional<ExporterKind> exporter_kind(std::string_view name) noexcept {
  for (std::size_t i = 0; i < std::size(kExporterNames); ++i) {
    if (same_ignoring_case(name, kExporterNames[i])) return static_cast<ExporterKind>(i);
  }
  return std::nullopt;
}

std::string_view to_string(ConsoleFormat format) noexcept {
  return kConsoleFormatNames[static_cast<int>(format)];
}

std::optional<ConsoleFormat> console_format(std::string_view name) noexcept {
  for (std::size_t i = 0; i < std::size(kConsoleFormatNames); ++i) {
    if (same_ignoring_case(name, kConsoleFormatNames[i])) return static_cast<ConsoleFormat>(i);
  }
  return std::nullopt;
}

std::optional<HangTimeout> hang_timeout(std::string_view text) noexcept {
  if (same_ignoring_case(text, "auto")) return HangTimeout{};
  if (same_ignoring_case(text, "off")) return HangTimeout{HangTimeout::Mode::off, 0.0};
  const std::optional<double> seconds = detail::parse_double(text);
  // Finite and at most a year: a larger value is a typo, not a timeout.
  if (!seconds || !(*seconds > 0.0) || *seconds > 365.0 * 86400.0) return std::nullopt;
  return HangTimeout{HangTimeout::Mode::fixed, *seconds};
}

Result<Config> Config::from_env(std::string_view prefix, std::string_view fallback_prefix,
                                const Env& env) {
  Config config;
  config.prefix = std::string(trim(prefix));
  config.fallback_prefix = std::string(trim(fallback_prefix));
  if (config.prefix.empty()) {
    return Error("Invalid configuration prefix: ''; accepted: a non-empty name such as " +
                 std::string(kDefaultPrefix));
  }
  const Reader reader(config.prefix, config.fallback_prefix, env);

  // ENABLED decides everything else, so it alone must parse.
  if (const Found found = reader.read("ENABLED")) {
    auto parsed = detail::parse_bool(found.value);
    if (!parsed) {
      return invalid_boolean(found.variable, found.value);
    }
    config.enabled = *parsed;
    config.sources["enabled"] = "env:" + found.variable;
  }

  config.otel = OtelSettings::from_env(env);
  if (!config.otel.service_name.value.empty()) {
    config.service_name = config.otel.service_name.value;
    config.sources["service_name"] = config.otel.service_name.source;
  }

  read_rank_strategy(reader, config);

  read_int64(reader, "EXPORT_RANK", "export_rank", config.export_rank, config,
             "a whole number such as -1 (last rank), 0 or 7");

  read_parsed(reader, "EXPORT_SAMPLE_RATE", "export_sample_rate", config.export_sample_rate, config,
              detail::parse_double, "float", "a number in [0.0, 1.0] such as 0.1");

  read_sampling_strategy(reader, config);
  read_bool(reader, "TRACES_ENABLED", "traces_enabled", config.traces_enabled, config);
  read_bool(reader, "METRICS_ENABLED", "metrics_enabled", config.metrics_enabled, config);
  read_bool(reader, "LOGS_ENABLED", "logs_enabled", config.logs_enabled, config);
  read_string(reader, "SPAN_GROUPS", "span_groups", config.span_groups, config);
  if (const Found found = reader.read("EXPORTER")) {
    if (const auto kind = exporter_kind(found.value)) {
      config.exporter = *kind;
      config.sources["exporter"] = "env:" + found.variable;
    } else {
      config.problems.emplace_back("Unknown exporter " + detail::quoted(found.value) + " in " +
                                   found.variable +
                                   "; accepted: " + std::string(kAcceptedExporters));
    }
  }
  if (const Found found = reader.read("CONSOLE_FORMAT")) {
    if (const auto format = lens::console_format(found.value)) {
      config.console_format = *format;
      config.sources["console_format"] = "env:" + found.variable;
    } else {
      config.problems.push_back(
          invalid_value("console format", found.variable, found.value, kAcceptedConsoleFormats));
    }
  }
  read_string(reader, "FILE_PATH", "file_path", config.file_path, config);
  read_parsed(reader, "HANG_TIMEOUT", "hang_timeout", config.hang_timeout, config,
              lens::hang_timeout, "hang timeout", kAcceptedHangTimeouts);
  read_parsed(reader, "HANG_STARTUP_TIMEOUT", "hang_startup_timeout", config.hang_startup_timeout,
              config, lens::hang_timeout, "hang start-up timeout", kAcceptedHangTimeouts);
  read_int64(reader, "SPAN_BUFFER_MB", "span_buffer_mb", config.span_buffer_mb, config,
             "a whole number of MiB from 1 to 65536 such as 64");
  read_string(reader, "RUN_ID", "run_id", config.run_id, config);
  read_string(reader, "USER_ID", "user_id", config.user_id, config);

  // W&B fields are read bare and verbatim (docs/configuration.md, "lens variables").
  if (auto entity = env.get("WANDB_ENTITY")) {
    config.wandb_entity = *entity;
    config.sources["wandb_entity"] = "env:WANDB_ENTITY";
  }
  if (auto project = env.get("WANDB_PROJECT")) {
    config.wandb_project = *project;
    config.sources["wandb_project"] = "env:WANDB_PROJECT";
  }
  return config;
}

void Config::apply(const CliOverrides& overrides) {
  if (overrides.otel_enabled) {
    enabled = true;
    sources["enabled"] = "cli:--otel-enabled";
  }
  if (overrides.service_name && !trim(*overrides.service_name).empty()) {
    service_name = std::string(trim(*overrides.service_name));
    sources["service_name"] = "cli:--otel-service-name";
  }
  if (overrides.span_groups && !trim(*overrides.span_groups).empty()) {
    span_groups = std::string(trim(*overrides.span_groups));
    sources["span_groups"] = "cli:--otel-span-groups";
  }
}

std::string Config::source_of(std::string_view field) const {
  auto it = sources.find(field);
  return it == sources.end() ? std::string("default") : it->second;
}

std::string Config::label_of(std::string_view field) const {
  const std::string source = source_of(field);
  if (source.rfind("env:", 0) == 0) {
    return source.substr(4);
  }
  if (source.rfind("cli:", 0) == 0) {
    return source.substr(4);
  }
  return "config." + std::string(field);
}

const std::vector<std::string>& config_field_names() {
  static const std::vector<std::string> names = {"enabled",
                                                 "service_name",
                                                 "rank_strategy",
                                                 "export_rank",
                                                 "export_sample_rate",
                                                 "sampling_strategy",
                                                 "traces_enabled",
                                                 "metrics_enabled",
                                                 "logs_enabled",
                                                 "span_groups",
                                                 "exporter",
                                                 "file_path",
                                                 "span_buffer_mb",
                                                 "run_id",
                                                 "user_id",
                                                 "wandb_entity",
                                                 "wandb_project",
                                                 "console_format",
                                                 "hang_timeout",
                                                 "hang_startup_timeout"};
  return names;
}

}  // namespace lens
