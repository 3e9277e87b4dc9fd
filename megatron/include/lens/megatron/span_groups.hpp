// The Megatron span-group vocabulary (docs/span-groups.md, "Vocabularies"): 8 groups on top of
// lens's base 8, and the presets default, per_step, profiling (and all), registered under namespace
// `megatron`.
// Thread-safe: constants and immutable tables; register_span_groups() may race with anything.
#pragma once

#include <array>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "lens/groups.hpp"
#include "lens/result.hpp"

namespace lens::megatron {

namespace groups {
inline constexpr std::string_view kNamespace = "megatron";

// The base groups, owned by namespace `lens`.
using ::lens::groups::kCheckpoint;
using ::lens::groups::kEvaluate;
using ::lens::groups::kForwardBackward;
using ::lens::groups::kJob;
using ::lens::groups::kLoadCheckpoint;
using ::lens::groups::kModelInit;
using ::lens::groups::kOptimizer;
using ::lens::groups::kStep;

// Megatron-only groups.
inline constexpr std::string_view kMicrobatch = "microbatch";        // per-microbatch fwd/bwd
inline constexpr std::string_view kLayer = "layer";                  // per-layer forward breakdown
inline constexpr std::string_view kCommunication = "communication";  // P2P and gradient sync
inline constexpr std::string_view kActivationOffload = "activation_offload";  // GPU<->CPU
inline constexpr std::string_view kDataLoading = "data_loading";  // dataset/dataloader/batches
inline constexpr std::string_view kFirstIteration = "first_iteration";  // warm-up iteration
inline constexpr std::string_view kTraceRegion = "trace_region";        // shadowed trace regions
inline constexpr std::string_view kInference = "inference";             // inference-server requests

inline constexpr std::array<std::string_view, 8> kMegatronGroups = {
    kMicrobatch,  kLayer,          kCommunication, kActivationOffload,
    kDataLoading, kFirstIteration, kTraceRegion,   kInference};

// Preset names.
using ::lens::groups::kPresetAll;
using ::lens::groups::kPresetDefault;
using ::lens::groups::kPresetPerStep;
inline constexpr std::string_view kPresetProfiling = "profiling";
}  // namespace groups

// The 16 groups of the Megatron vocabulary (base 8 and Megatron's 8).
const std::set<std::string>& all_span_groups();

// Exactly default, per_step, profiling and all, as the Megatron vocabulary defines them.
const std::map<std::string, std::set<std::string>>& span_group_presets();

// Registers Megatron's 8 groups and its presets under namespace `megatron`; the presets borrow
// the base groups from namespace `lens`, which must be registered. Idempotent.
Status register_span_groups();

}  // namespace lens::megatron
