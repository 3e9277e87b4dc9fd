// validate(): every configuration check in one place, in a fixed order so that all ranks
// report the same first error (see include/lens/validate.hpp).
#include "lens/validate.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include "lens/attributes.hpp"
#include "lens/groups.hpp"
#include "lens/sampling.hpp"
#include "lens/strategies.hpp"
#include "validate/resolved.hpp"

namespace lens {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) {
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

// A TLS file named by an OTEL_EXPORTER_OTLP_* variable must be readable at setup.
// Strategy names are matched in any case, as the registries look them up.
bool same_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    const auto lower = [](char c) {
      return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    };
    return lower(x) == lower(y);
  });
}

Status check_readable(const Sourced<std::string>& setting) {
  if (setting.value.empty()) {
    return {};
  }
  std::ifstream file(setting.value);
  if (!file) {
    const std::string variable =
        setting.source.rfind("env:", 0) == 0 ? setting.source.substr(4) : setting.source;
    return Error("Cannot read the file in " + variable + ": '" + setting.value + "' (" +
                 std::strerror(errno) + "); accepted: a readable PEM file");
  }
  return {};
}

}  // namespace

Status check_otlp_settings(const OtlpSignalSettings& settings, Signal signal) {
  // A client key without its certificate (or the reverse) would only fail at the first TLS
  // handshake, on the exporter's thread; say so at setup instead.
  const Sourced<std::string>& key = settings.client_key;
  const Sourced<std::string>& certificate = settings.client_certificate;
  if (key.value.empty() == certificate.value.empty()) return {};
  const Sourced<std::string>& given = key.value.empty() ? certificate : key;
  std::string missing = "OTEL_EXPORTER_OTLP_";
  for (char c : to_string(signal)) missing += static_cast<char>(c - 'a' + 'A');
  missing += key.value.empty() ? "_CLIENT_KEY" : "_CLIENT_CERTIFICATE";
  const std::string name = given.source.rfind("env:", 0) == 0
                               ? given.source.substr(4)
                               : (key.value.empty() ? "the client certificate" : "the client key");
  return Error("Client TLS files must come in pairs: " + name + "='" + given.value +
               "' is set but " + missing + " (or its general form) is not; " +
               "accepted: both a client key and a client certificate (mTLS), or neither");
}

Status validate(const Config& config, const RankInfo* rank) {
  auto resolved = validate_and_resolve(config, rank);
  if (!resolved.ok()) return Error(resolved.message());
  return {};
}

Result<ResolvedChoices> validate_and_resolve(const Config& config, const RankInfo* rank) {
  ResolvedChoices resolved;
  if (!config.problems.empty()) {
    return config.problems.front();
  }
  if (!config.otel.problems.empty()) {
    return config.otel.problems.front();
  }

  auto rank_strategy = get_rank_strategy(config.rank_strategy);
  if (!rank_strategy.ok()) {
    return Error("Unknown rank strategy '" + config.rank_strategy + "' in " +
                 config.label_of("rank_strategy") +
                 "; accepted: " + join(registered_rank_strategies()) +
                 " (or a name registered with register_rank_strategy())");
  }
  if (!(config.export_sample_rate >= 0.0 && config.export_sample_rate <= 1.0)) {
    return Error("Invalid value for " + config.label_of("export_sample_rate") + ": '" +
                 to_string(AttributeValue(config.export_sample_rate)) +
                 "'; accepted: export_sample_rate in [0.0, 1.0]");
  }
  if (rank != nullptr && same_ignoring_case(config.rank_strategy, "single_rank") &&
      config.export_rank >= rank->world_size) {
    return Error("Invalid value for " + config.label_of("export_rank") + ": '" +
                 std::to_string(config.export_rank) + "' is not a rank of this job (world size " +
                 std::to_string(rank->world_size) + "), so no rank would export; accepted: -1 " +
                 "(last rank) or 0.." + std::to_string(rank->world_size - 1));
  }
  resolved.rank_strategy = std::move(rank_strategy).value();
  if (!config.sampling_strategy.empty()) {
    auto factory = get_sampling_strategy(config.sampling_strategy);
    if (!factory.ok()) {
      const auto names = registered_sampling_strategies();
      return Error("Unknown sampling strategy '" + config.sampling_strategy + "' in " +
                   config.label_of("sampling_strategy") + "; accepted: empty (the " +
                   "OTEL_TRACES_SAMPLER default), " + join(names) +
                   " (or a name registered with register_sampling_strategy())");
    }
    resolved.sampling_strategy = std::move(factory).value();
  }
  auto groups = resolve_span_groups(config.span_groups);
  if (!groups.ok()) {
    return Error("Invalid span-group spec in " + config.label_of("span_groups") + ": " +
                 groups.message());
  }
  resolved.span_groups = std::move(groups).value();
  if (config.exporter == ExporterKind::file && config.file_path.empty()) {
    return Error("Empty file path in " + config.label_of("file_path") +
                 "; accepted: a directory for traces.jsonl, metrics.jsonl and logs.jsonl");
  }
  if (config.span_buffer_mb < 1 || config.span_buffer_mb > 65536) {
    return Error("Invalid value for " + config.label_of("span_buffer_mb") + ": '" +
                 std::to_string(config.span_buffer_mb) +
                 "'; accepted: a whole number of MiB from 1 to 65536");
  }
  if (config.exporter == ExporterKind::otlp) {
    for (Signal signal : {Signal::traces, Signal::metrics, Signal::logs}) {
      const OtlpSignalSettings& otlp = config.otel.signal(signal);
      for (const auto* file : {&otlp.certificate, &otlp.client_key, &otlp.client_certificate}) {
        if (Status status = check_readable(*file); !status.ok()) {
          return Error(status.message());
        }
      }
      if (Status status = check_otlp_settings(otlp, signal); !status.ok()) {
        return Error(status.message());
      }
    }
  }
  return resolved;
}

}  // namespace lens
