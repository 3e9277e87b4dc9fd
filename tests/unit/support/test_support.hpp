// Small builders shared by the unit tests: a RankInfo and a Config from a fixed environment,
// failing the current test (not aborting) when they cannot be built; the Config of an exporting
// rank; a failure's message; ids (and a trace id's bytes) as lowercase hex; a counter of failures
// over many items that reports only the first few; the process's thread count; an address-space
// limit for a forked child.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <opentelemetry/trace/span_id.h>
#include <opentelemetry/trace/trace_id.h>
#include <pthread.h>
#include <sys/resource.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <fstream>
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

// An enabled rank that exports (rank strategy all_ranks) to `exporter`, under `run_id`; every
// other field at its default, for the caller to set.
inline Config exporting_config(std::string run_id, ExporterKind exporter) {
  Config config;
  config.enabled = true;
  config.rank_strategy = "all_ranks";
  config.run_id = std::move(run_id);
  config.exporter = exporter;
  return config;
}

// The error message of a failed Status or Result; "(succeeded)" for one that did not fail, so
// that EXPECT_EQ(failure_of(outcome), "...") checks both at once and prints a readable difference.
template <class Outcome>
std::string failure_of(const Outcome& outcome) {
  return outcome.ok() ? std::string("(succeeded)") : outcome.message();
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

// The 16 bytes of a trace id, as its hex.
inline std::string hex(const std::array<std::uint8_t, 16>& bytes) {
  return hex(opentelemetry::trace::TraceId(
      opentelemetry::nostd::span<const std::uint8_t, 16>(bytes.data(), 16)));
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

// The threads this process runs now (entries of /proc/self/task).
inline int thread_count() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') ++count;
    }
    closedir(dir);
  }
  return count;
}

// For a forked child only: limits the process's address space to what it maps now plus `room`
// bytes and makes new threads' stacks kLimitedThreadStack, so that a thread start or a large
// allocation beyond the room fails, as it does at a container's memory or thread limit. The
// stacks are larger than the default 8 MiB because glibc reuses the cached stacks of exited
// threads (earlier tests') without mapping anything. False when the limit could not be set.
inline constexpr std::size_t kLimitedThreadStack = std::size_t{16} << 20;
inline bool limit_address_space(std::size_t room) {
  std::ifstream status("/proc/self/status");
  std::string line;
  unsigned long long mapped_kib = 0;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) mapped_kib = std::stoull(line.substr(7));
  }
  if (mapped_kib == 0) return false;
  pthread_attr_t attributes;
  if (pthread_attr_init(&attributes) != 0) return false;
  const bool stack_set = pthread_attr_setstacksize(&attributes, kLimitedThreadStack) == 0 &&
                         pthread_setattr_default_np(&attributes) == 0;
  pthread_attr_destroy(&attributes);
  if (!stack_set) return false;
  const rlim_t limit = static_cast<rlim_t>(mapped_kib) * 1024 + room;
  const rlimit address_space{limit, limit};
  return setrlimit(RLIMIT_AS, &address_space) == 0;
}

}  // namespace lens::test_support
