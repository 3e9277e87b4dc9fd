// `lens config`: resolves the configuration exactly as setup would on this rank and prints
// it (JSON by default, or an aligned table), with where each value came from. Invalid input:
// exit status 2, nothing on stdout, one line on stderr starting "lens: ".
// Reading is in config_inputs, the JSON in config_json, the table in config_text.
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "config/config_inputs.hpp"
#include "config/config_json.hpp"
#include "config/config_text.hpp"
#include "lens/resource.hpp"
#include "lens/strategies.hpp"
#include "lens/validate.hpp"

namespace lens::cli {
namespace {

constexpr const char* kConfigUsage =
    "usage: lens config [--prefix P] [--fallback-prefix F]\n"
    "                   [--rank R --world-size W [--local-rank L]]\n"
    "                   [--otel-enabled] [--otel-service-name NAME] [--otel-span-groups SPEC]\n"
    "                   [--format json|text]\n"
    "\n"
    "Prints the configuration that setup would resolve on this rank, with the source of\n"
    "every value. --prefix MEGATRON_OTEL implies --fallback-prefix NEMO_LENS, the Megatron\n"
    "span-group vocabulary and the Megatron defaults. Without --rank, the rank comes from the\n"
    "launcher's variables (torchrun, Open MPI, PMI, SLURM). --local-rank defaults to the rank\n"
    "(one node). Exit status 2 on invalid input.\n";

int fail(const std::string& message) {
  std::cerr << "lens: " << message << "\n";
  return 2;
}

// The run id setup would use, into config.run_id (with resolve_run_id's warning on stderr); the
// source shown for it: a random or collective id is the default.
Result<std::string> apply_run_id(Config& config, const RankInfo& rank, const Env& env) {
  auto run_id = resolve_run_id(config, rank, env, nullptr);
  if (!run_id.ok()) return Error(run_id.message());
  if (!run_id->warning.empty()) {
    std::cerr << "lens: warning: " << run_id->warning << "\n";
  }
  config.run_id = run_id->value;
  return run_id->source == "random" || run_id->source == "collective" ? std::string("default")
                                                                      : run_id->source;
}

// Whether this rank exports (never while lens or the SDK is off).
Result<bool> exports(const Config& config, const RankInfo& rank) {
  if (!config.enabled || config.otel.sdk_disabled.value) return false;
  return should_export(config, rank);
}

// OTEL_RESOURCE_ATTRIBUTES may name the service when nothing else does (see build_resource);
// report the name the resource will carry.
void adopt_resource_service_name(Config& config, const Attributes& resource) {
  if (auto it = resource.find("service.name");
      it != resource.end() && std::holds_alternative<std::string>(it->second) &&
      std::get<std::string>(it->second) != config.service_name) {
    config.service_name = std::get<std::string>(it->second);
    config.sources["service_name"] = "env:OTEL_RESOURCE_ATTRIBUTES";
  }
}

}  // namespace

int config_command(const std::vector<std::string>& args) {
  const OptionSpec spec{{"--prefix", "--fallback-prefix", "--rank", "--world-size", "--local-rank",
                         "--otel-service-name", "--otel-span-groups", "--format"},
                        {"--otel-enabled", "--help"}};
  auto parsed = parse_command_options(args, spec, "config", kConfigUsage);
  if (const int* exit_status = std::get_if<int>(&parsed)) return *exit_status;
  const ParsedOptions& options = std::get<ParsedOptions>(parsed);
  const std::string format = options.get("--format").value_or("json");
  if (format != "json" && format != "text") {
    return fail("invalid value for --format: '" + format + "'; accepted: json, text");
  }

  const Env env = Env::process();
  auto loaded = load_config(options, env);
  if (!loaded.ok()) return fail(loaded.message());
  Config config = std::move(loaded).value();
  auto rank = resolve_rank(options, env);
  if (!rank.ok()) return fail(rank.message());
  if (Status status = validate(config, &*rank); !status.ok()) return fail(status.message());
  const Result<std::string> run_id_source = apply_run_id(config, *rank, env);
  if (!run_id_source.ok()) return fail(run_id_source.message());
  const Result<bool> exporting = exports(config, *rank);
  if (!exporting.ok()) return fail(exporting.message());
  const Attributes resource = build_resource(config, *rank, {}, env);
  adopt_resource_service_name(config, resource);

  const nlohmann::ordered_json out =
      config_json(config, *rank, *exporting, resource, *run_id_source, env);
  if (format == "text") {
    print_text(out);
  } else {
    // Invalid UTF-8 (a value from the environment) is printed as U+FFFD, never a crash.
    std::cout << out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  }
  return 0;
}

}  // namespace lens::cli
