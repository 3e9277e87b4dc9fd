// Small builders shared by the unit tests: a RankInfo and a Config from a fixed environment,
// failing the current test (not aborting) when they cannot be built; ids as lowercase hex.
#pragma once

#include <gtest/gtest.h>

#include <opentelemetry/trace/span_id.h>
#include <opentelemetry/trace/trace_id.h>

#include <string>
#include <string_view>

#include "lens/config.hpp"
#include "lens/env.hpp"
#include "lens/rank_info.hpp"

namespace lens::test_support {

inline RankInfo rank_of(int rank, int world_size) {
  auto info = RankInfo::make(rank, world_size);
  EXPECT_TRUE(info.ok()) << info.message();
  return info.ok() ? *info : RankInfo{};
}

inline Config config_from(const Env::Map& variables, std::string_view prefix = kDefaultPrefix,
                          std::string_view fallback = {}) {
  auto config = Config::from_env(prefix, fallback, Env::from(variables));
  EXPECT_TRUE(config.ok()) << config.message();
  return config.ok() ? *config : Config{};
}

inline std::string hex(const opentelemetry::trace::TraceId& id) {
  char buffer[32];
  id.ToLowerBase16(buffer);
  return std::string(buffer, sizeof(buffer));
}

inline std::string hex(const opentelemetry::trace::SpanId& id) {
  char buffer[16];
  id.ToLowerBase16(buffer);
  return std::string(buffer, sizeof(buffer));
}

}  // namespace lens::test_support
