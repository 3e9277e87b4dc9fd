// Small builders shared by the unit tests: a RankInfo and a Config from a fixed environment,
// failing the current test (not aborting) when they cannot be built; ids as lowercase hex; a
// counter of failures over many items that reports only the first few.
#pragma once

#include <gtest/gtest.h>

#include <opentelemetry/trace/span_id.h>
#include <opentelemetry/trace/trace_id.h>

#include <string>
#include <string_view>
#include <utility>

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

// Counts the items that fail a check and reports only the first `shown` of them, so that a
// systematic error over thousands of items does not flood the output; the test then expects
// count() == 0.
class FailureCounter {
 public:
  explicit FailureCounter(int shown = 3) : shown_(shown) {}

  // Counts one failure; `describe` (returning something streamable) is called only when it is
  // reported.
  template <typename Describe>
  void add(Describe&& describe) {
    if (++count_ <= shown_) ADD_FAILURE() << std::forward<Describe>(describe)();
  }
  int count() const { return count_; }

 private:
  int shown_;
  int count_ = 0;
};

}  // namespace lens::test_support
