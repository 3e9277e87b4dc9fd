// Shared by the benchmark programs: the configuration of an exporting rank whose exporter is
// `none`, so that the whole lens pipeline runs and nothing is sent anywhere.
#pragma once

#include <string>
#include <utility>

#include "lens/config.hpp"

namespace lens::bench {

inline Config exporting_none_config(std::string run_id) {
  Config config;
  config.enabled = true;
  config.rank_strategy = "all_ranks";
  config.exporter = lens::ExporterKind::none;
  config.run_id = std::move(run_id);
  config.span_groups = "default";
  return config;
}

}  // namespace lens::bench
