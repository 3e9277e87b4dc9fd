// The one validation entry (SPEC Part 1 §1.3): setup calls it for an enabled config before
// anything is installed, `lens config` calls it always. It checks everything that can be
// wrong in a configuration — parse problems, strategy names, sample rate, span-group spec,
// exporter, OTLP protocol/endpoints/headers/files, sampler, intervals — and returns the first
// error as one line naming the variable or flag, the bad value and what is accepted.
// Thread-safe (reads the strategy and span-group registries under their locks).
#pragma once

#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"

namespace lens {

// With `rank`, also checks what depends on the job's shape (an EXPORT_RANK outside the job).
Status validate(const Config& config, const RankInfo* rank = nullptr);

}  // namespace lens
