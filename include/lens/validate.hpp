// The one validation entry (docs/configuration.md, "Validation"): setup calls it for an enabled
// config before anything is installed, `lens config` calls it always. It checks everything that can
// be wrong in a configuration — parse problems, strategy names, sample rate, span-group spec,
// exporter, OTLP protocol/endpoints/headers/files, sampler, intervals — and returns the first error
// as one line naming the variable or flag, the bad value and what is accepted.
// Thread-safe (reads the strategy and span-group registries under their locks).
#pragma once

#include "lens/config.hpp"
#include "lens/rank_info.hpp"
#include "lens/result.hpp"

namespace lens {

// With `rank`, also checks what depends on the job's shape (an EXPORT_RANK outside the job).
Status validate(const Config& config, const RankInfo* rank = nullptr);

// The OTLP exporter's rule for the client TLS files of `signal`: a client key without its
// client certificate (or the reverse) is an error naming the variable, its value and what is
// accepted. validate() applies it to each signal when the exporter is OTLP (so setup and
// `lens config` refuse the same settings), and the exporter factory to the settings it builds.
Status check_otlp_settings(const OtlpSignalSettings& settings, Signal signal);

}  // namespace lens
