// What the prose around the docs' C++ blocks speaks of, for the doc-snippet test
// (cmake/LensDocSnippets.cmake): a telemetry `handle`, `overrides`, a `config`, `rank` and
// `rank_info`, Megatron `args` and a `collective`, the `pretrain_span`, a thread `pool`, and the
// trainer's own functions. Every object is what a program would have before telemetry is set
// up (a disabled handle: no-op tracer, meter and logger), so that a block runs as written. A
// block may declare its own object of the same name (it then shadows this one).
#pragma once


#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lens/config.hpp"
#include "lens/megatron/training_args.hpp"
#include "lens/rank_info.hpp"
#include "lens/resource.hpp"
#include "lens/span.hpp"
#include "lens/telemetry.hpp"

namespace lens_doc_context {

struct Snippet {
  std::string where;  // "<file>:<line>"
  int (*run)();
};

inline std::vector<Snippet>& snippets() {
  static std::vector<Snippet> all;
  return all;
}

inline bool register_snippet(const char* where, int (*run)()) {
  snippets().push_back({where, run});
  return true;
}

// A job of one process.
class OneProcess final : public lens::Collective {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  lens::Result<std::string> broadcast(const std::string& payload, int) override { return payload; }
};

// Runs each task at once, on the calling thread.
struct ThreadPool {
  template <class F>
  void submit(F task) {
    task();
  }
};

inline lens::TelemetryHandle handle;
inline lens::SetupOverrides overrides;
inline lens::Config config;
inline const lens::RankInfo rank = *lens::RankInfo::make(0, 1);
inline const lens::RankInfo rank_info = rank;
inline lens::megatron::TrainingArgs args;
inline OneProcess collective;
inline ThreadPool pool;
inline double seconds = 1.5;
inline void prefetch() {}
inline void forward_backward() {}

}  // namespace lens_doc_context
