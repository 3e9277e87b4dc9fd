// Fuzz target: span-group spec resolution (SPAN_GROUPS, --otel-span-groups), strict and lenient,
// against lens's vocabulary alone or with Megatron's registered, then the enabled flags it sets.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "lens/groups.hpp"
#include "lens/megatron/span_groups.hpp"

// Input: bit 0 of byte 0 registers the Megatron vocabulary (else it is removed); the rest is the
// spec.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) {
    return 0;
  }
  if ((data[0] & 1) != 0) {
    if (lens::Status status = lens::megatron::register_span_groups(); !status.ok()) {
      lens::fuzz::fail("registering the Megatron vocabulary failed: " + status.message());
    }
  } else {
    (void)lens::unregister_span_groups(lens::megatron::groups::kNamespace);
  }
  const std::string spec(lens::fuzz::as_text(data + 1, size - 1));

  const auto strict = lens::resolve_span_groups(spec);
  const lens::LenientResolution lenient = lens::resolve_span_groups_lenient(spec);
  if (strict.ok() != lenient.unknown.empty()) {
    lens::fuzz::fail("strict and lenient resolution disagree on '" + spec + "'");
  }
  if (!strict.ok()) {
    if (strict.message().rfind("Unknown span group or preset: ", 0) != 0) {
      lens::fuzz::fail("unexpected error for '" + spec + "': " + strict.message());
    }
    return 0;
  }
  if (*strict != lenient.enabled) {
    lens::fuzz::fail("strict and lenient resolution give different sets for '" + spec + "'");
  }
  const std::vector<std::string> registered = lens::registered_span_groups();
  for (const std::string& group : *strict) {
    if (!std::binary_search(registered.begin(), registered.end(), group)) {
      lens::fuzz::fail("'" + spec + "' resolved to the unregistered group '" + group + "'");
    }
  }
  lens::set_enabled_span_groups(*strict);
  for (const std::string& group : *strict) {
    // Handles are interned for the process lifetime: only registered (bounded) names here.
    if (!lens::is_span_group_enabled(group) || !lens::span_group_handle(group).enabled()) {
      lens::fuzz::fail("group '" + group + "' of '" + spec + "' is not enabled");
    }
  }
  if (lens::enabled_span_groups() != *strict) {
    lens::fuzz::fail("enabled_span_groups() differs from what was set for '" + spec + "'");
  }
  return 0;
}
