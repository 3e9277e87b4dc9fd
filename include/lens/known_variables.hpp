// The environment variables lens reads, in one table, and the check that names every set
// variable under the active prefixes and OTEL_ that nothing reads, with the closest known name
// ("did you mean MEGATRON_OTEL_ENABLED?"). A misspelt variable otherwise leaves a job running
// with default telemetry and no word said.
//
// The table is kept true by a test that records every variable Config::from_env looks up and
// fails when one is missing here (tests/unit/config/known_variables_test.cpp).
// Thread-safety: pure functions over an immutable table; Env as in lens/env.hpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lens/env.hpp"

namespace lens {

// The keys read under a configuration prefix as PREFIX_KEY (e.g. "ENABLED", "SPAN_GROUPS").
const std::vector<std::string_view>& known_prefixed_keys();

// The OTEL_* variables lens reads.
const std::vector<std::string>& known_otel_variables();

// OTEL_* variables the OpenTelemetry specification defines that lens does not read. Setting
// one is reported with its own wording (another OpenTelemetry SDK in the job may read it).
const std::vector<std::string_view>& unread_standard_otel_variables();

// The candidate closest to `name` (ASCII case ignored), when its edit distance (insertions,
// deletions, substitutions and adjacent swaps) is small for the name's length: at most one edit
// up to 7 characters, two up to 11, three beyond; nullopt when none is that close. Ties go to the
// earlier candidate.
std::optional<std::string> closest_name(std::string_view name,
                                        const std::vector<std::string>& candidates);

// One message per set variable (in name order) that starts with `prefix`_ or
// `fallback_prefix`_ (when not empty) or OTEL_ and that lens does not read, e.g.
// "MEGATRON_OTEL_ENABLE is set but nothing reads it; did you mean MEGATRON_OTEL_ENABLED?".
// Variables of the language SDKs (OTEL_PYTHON_*, OTEL_JAVAAGENT_*, ...) are not reported.
std::vector<std::string> unknown_variable_warnings(const Env& env, std::string_view prefix,
                                                   std::string_view fallback_prefix = {});

}  // namespace lens
