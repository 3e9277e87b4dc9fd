// Uses the installed public headers and libraries: reads a config from a fixed environment,
// validates it against the span-group and strategy registries, and prints a few fields.
#include <iostream>

#include "lens/config.hpp"
#include "lens/groups.hpp"
#include "lens/megatron/config.hpp"
#include "lens/strategies.hpp"
#include "lens/validate.hpp"
#include "lens/version.hpp"

int main() {
  auto config = lens::megatron::config_from_env(
      lens::Env::from({{"MEGATRON_OTEL_ENABLED", "1"},
                       {"NEMO_LENS_SPAN_GROUPS", "per_step"},
                       {"MEGATRON_OTEL_RANK_STRATEGY", "all_ranks"}}));
  if (!config.ok()) {
    std::cerr << config.message() << "\n";
    return 1;
  }
  if (lens::Status status = lens::validate(*config); !status.ok()) {
    std::cerr << status.message() << "\n";
    return 1;
  }
  auto groups = lens::resolve_span_groups(config->span_groups);
  auto rank = lens::RankInfo::make(1, 4);
  auto exporting = lens::should_export(*config, *rank);
  std::cout << "lens " << lens::kVersion << " service=" << config->service_name
            << " groups=" << groups->size() << " exporting=" << (*exporting ? "yes" : "no") << "\n";
  return 0;
}
