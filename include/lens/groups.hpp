// Span groups: a process-wide, namespaced registry of group names and presets (docs/span-groups.md,
// "Vocabularies"), spec-string resolution, and the enabled flags every instrumentation site checks
// first.
// Thread-safety: every function may be called from any thread at any time. Mutators take a mutex;
// SpanGroupHandle::enabled() is one relaxed atomic load and never blocks.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lens/result.hpp"

namespace lens {

// The base vocabulary (docs/span-groups.md, "Vocabularies"), registered under namespace `lens` on
// first use of the registry.
namespace groups {
inline constexpr std::string_view kNamespace = "lens";

inline constexpr std::string_view kJob = "job";
inline constexpr std::string_view kCheckpoint = "checkpoint";
inline constexpr std::string_view kEvaluate = "evaluate";
inline constexpr std::string_view kModelInit = "model_init";
inline constexpr std::string_view kLoadCheckpoint = "load_checkpoint";
inline constexpr std::string_view kStep = "step";
inline constexpr std::string_view kForwardBackward = "forward_backward";
inline constexpr std::string_view kOptimizer = "optimizer";

// Every group of the `lens` namespace.
inline constexpr std::array<std::string_view, 8> kLensGroups = {
    kJob, kCheckpoint, kEvaluate, kModelInit, kLoadCheckpoint, kStep, kForwardBackward, kOptimizer};

// Preset names. `all` is reserved: it always means every registered group.
inline constexpr std::string_view kPresetDefault = "default";   // job, checkpoint, evaluate
inline constexpr std::string_view kPresetPerStep = "per_step";  // every lens group
inline constexpr std::string_view kPresetAll = "all";
}  // namespace groups

// ---- Registry -------------------------------------------------------------------------------

// Registers `groups` and `presets` (preset name -> member groups) under namespace `ns`. Every
// name is trimmed and lower-cased. A preset may name this call's groups or groups another
// namespace already owns. A group may be owned by only one namespace unless `allow_override`;
// with `allow_override` an existing namespace is replaced wholesale (its old presets dropped,
// its old groups not referenceable by the new presets). Nothing changes on error.
Status register_span_groups(std::string_view ns, const std::vector<std::string>& groups,
                            const std::map<std::string, std::vector<std::string>>& presets = {},
                            bool allow_override = false);

// Removes a namespace, its groups and its presets; presets of other namespaces lose the groups
// only it owned. The built-in `lens` namespace may be removed too.
Status unregister_span_groups(std::string_view ns);

// Registers the base vocabulary under `lens` again (after unregister_span_groups("lens")).
// Succeeds without change when `lens` is already registered with exactly that vocabulary.
Status register_lens_span_groups();

// Every registered group, sorted.
std::vector<std::string> registered_span_groups();
// Every registered namespace, sorted.
std::vector<std::string> span_group_namespaces();
// Preset name -> groups: the union across namespaces, restricted to registered groups. Always
// contains `all` = every registered group.
std::map<std::string, std::set<std::string>> span_group_presets();

// ---- Resolution (docs/span-groups.md, "Specs") ------------------------------------------------

// Resolves a spec such as "default,step": split on ',', trim, drop empty parts, lower-case; each
// part is a preset (checked first) or a group. An empty spec is the empty set. Any unknown part
// is an error: "Unknown span group or preset: 'foo'. Valid options: [all, checkpoint, ...]".
Result<std::set<std::string>> resolve_span_groups(std::string_view spec);

struct LenientResolution {
  std::set<std::string> enabled;
  std::vector<std::string> unknown;  // lower-cased, in order of appearance, no duplicates
};
// As resolve_span_groups, for a process that knowingly runs with another vocabulary: unknown
// parts are reported instead of failing.
LenientResolution resolve_span_groups_lenient(std::string_view spec);

// ---- Enabled state (docs/span-groups.md, "API") -----------------------------------------------

// Replaces the set of enabled groups. Names are used exactly as given (resolution lower-cases,
// lookups do not), and need not be registered.
void set_enabled_span_groups(const std::set<std::string>& groups);
// Case-sensitive membership test; false for every name before the first set call.
bool is_span_group_enabled(std::string_view name);
std::set<std::string> enabled_span_groups();

namespace detail {
// The flag behind a default-constructed handle: never set.
inline constinit const std::atomic<bool> kSpanGroupNeverEnabled{false};
}  // namespace detail

// The hot-path view of one group's enabled flag. Obtain it once per site and keep it:
//   static const auto handle = lens::span_group_handle(lens::groups::kStep);
//   if (handle.enabled()) { ... }
// Flags are interned per name for the whole life of the process (stable addresses, never freed),
// so a handle stays valid forever, including one made before its group is registered or enabled.
class SpanGroupHandle {
 public:
  // A handle that is never enabled.
  constexpr SpanGroupHandle() noexcept = default;

  // Relaxed is enough: the flag is a standalone gate and publishes no other data. A site that
  // sees a stale value records (or skips) a span or two around the switch, which is acceptable;
  // what the enabled branch then touches (tracer, buffers) is published with its own ordering.
  bool enabled() const noexcept { return flag_->load(std::memory_order_relaxed); }
  // The group name as given to span_group_handle (interned; valid for the process lifetime).
  std::string_view name() const noexcept { return name_; }

 private:
  friend SpanGroupHandle span_group_handle(std::string_view name);
  constexpr SpanGroupHandle(const std::atomic<bool>* flag, std::string_view name) noexcept
      : flag_(flag), name_(name) {}

  const std::atomic<bool>* flag_ = &detail::kSpanGroupNeverEnabled;
  std::string_view name_;
};

// The handle for `name` (case-sensitive, like is_span_group_enabled). Takes a lock: call it once
// per site, not per event.
SpanGroupHandle span_group_handle(std::string_view name);

namespace detail {
// Test hook: the registry back to just the `lens` namespace, and every group disabled.
void reset_span_groups_for_testing();
}  // namespace detail

}  // namespace lens
