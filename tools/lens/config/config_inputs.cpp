// What `lens config` reads (see config_inputs.hpp).
#include "config/config_inputs.hpp"

#include <algorithm>
#include <string>

#include "lens/megatron/config.hpp"
#include "lens/megatron/span_groups.hpp"

namespace lens::cli {

Result<Config> load_config(const ParsedOptions& options, const Env& env) {
  const std::string prefix = options.get("--prefix").value_or(std::string(kDefaultPrefix));
  const bool megatron_prefix = prefix == lens::megatron::kPrefix;
  std::string fallback = options.get("--fallback-prefix").value_or("");
  if (megatron_prefix && !options.get("--fallback-prefix")) {
    fallback = std::string(lens::megatron::kFallbackPrefix);
  }
  if (options.get("--prefix") && prefix.empty()) {
    return Error("invalid value for --prefix: ''; accepted: a non-empty prefix such as NEMO_LENS");
  }
  if (megatron_prefix) {
    if (Status status = lens::megatron::register_span_groups(); !status.ok()) {
      return Error(status.message());
    }
  }
  auto config_result = Config::from_env(prefix, fallback, env);
  if (!config_result.ok()) return Error(config_result.message());
  Config config = std::move(config_result).value();
  if (megatron_prefix) lens::megatron::apply_defaults(config);

  CliOverrides overrides;
  overrides.otel_enabled = options.has("--otel-enabled");
  for (const char* flag : {"--otel-service-name", "--otel-span-groups"}) {
    if (auto value = options.get(flag);
        value && value->find_first_not_of(" \t") == std::string::npos) {
      return Error(
          std::string("invalid value for ") + flag + ": '" + *value + "'; accepted: a non-empty " +
          (std::string(flag) == "--otel-service-name" ? "service name" : "span-group spec"));
    }
  }
  overrides.service_name = options.get("--otel-service-name");
  overrides.span_groups = options.get("--otel-span-groups");
  config.apply(overrides);
  return config;
}

// The rank: explicit flags, or what the launcher set.
Result<RankInfo> resolve_rank(const ParsedOptions& options, const Env& env) {
  const auto rank_flag = options.get("--rank");
  const auto world_flag = options.get("--world-size");
  const auto local_flag = options.get("--local-rank");
  if (!rank_flag && !world_flag && !local_flag) {
    auto detected = RankInfo::detect(env);
    if (!detected.ok()) return Error(detected.message());
    return *detected;
  }
  if (!rank_flag || !world_flag) {
    return Error("--rank and --world-size must be given together (--local-rank is optional)");
  }
  auto r = parse_int_option("--rank", *rank_flag, 0);
  auto w = parse_int_option("--world-size", *world_flag, 1);
  if (!r.ok()) return Error(r.message());
  if (!w.ok()) return Error(w.message());
  int local = *r;
  if (local_flag) {
    auto l = parse_int_option("--local-rank", *local_flag, 0);
    if (!l.ok()) return Error(l.message());
    local = *l;
  }
  auto made = RankInfo::make(*r, *w, local, local_flag ? std::max(local + 1, 1) : *w, 0);
  if (!made.ok()) return Error(made.message());
  RankInfo rank = *made;
  rank.source = "explicit";
  return rank;
}

}  // namespace lens::cli
