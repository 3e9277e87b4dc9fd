// The Megatron span-group vocabulary and its registration (see span_groups.hpp).
// Tables are built once (thread-safe function-local statics) and never change.
#include "lens/megatron/span_groups.hpp"

#include <initializer_list>
#include <vector>

namespace lens::megatron {
namespace {

std::set<std::string> names(std::initializer_list<std::string_view> list) {
  std::set<std::string> out;
  for (const auto name : list) {
    out.emplace(name);
  }
  return out;
}

std::vector<std::string> as_vector(const std::set<std::string>& set) {
  return {set.begin(), set.end()};
}

}  // namespace

const std::set<std::string>& all_span_groups() {
  static const std::set<std::string> all = [] {
    std::set<std::string> out;
    for (const auto name : ::lens::groups::kLensGroups) {
      out.emplace(name);
    }
    for (const auto name : groups::kMegatronGroups) {
      out.emplace(name);
    }
    return out;
  }();
  return all;
}

const std::map<std::string, std::set<std::string>>& span_group_presets() {
  using namespace groups;  // NOLINT(google-build-using-namespace): the vocabulary's own names
  static const std::map<std::string, std::set<std::string>> presets = {
      {std::string(kPresetDefault),
       names({kJob, kCheckpoint, kEvaluate, kFirstIteration, kInference})},
      {std::string(kPresetPerStep),
       names({kJob, kCheckpoint, kEvaluate, kModelInit, kLoadCheckpoint, kStep, kForwardBackward,
              kOptimizer, kCommunication, kDataLoading, kFirstIteration, kInference})},
      {std::string(kPresetProfiling), all_span_groups()},
      {std::string(kPresetAll), all_span_groups()},
  };
  return presets;
}

Status register_span_groups() {
  std::vector<std::string> own(groups::kMegatronGroups.begin(), groups::kMegatronGroups.end());
  std::map<std::string, std::vector<std::string>> presets;
  for (const auto& [name, members] : span_group_presets()) {
    if (name != groups::kPresetAll) {  // reserved: the registry defines it
      presets.emplace(name, as_vector(members));
    }
  }
  const std::string_view ns = groups::kNamespace;
  Status status = ::lens::register_span_groups(ns, own, presets);
  if (status.ok()) {
    return status;
  }
  // Already registered (a second call, or a racing one): replace it with the same vocabulary.
  // Its groups were checked against other namespaces when it was first registered.
  for (const auto& registered : ::lens::span_group_namespaces()) {
    if (registered == ns) {
      return ::lens::register_span_groups(ns, own, presets, /*allow_override=*/true);
    }
  }
  return status;
}

}  // namespace lens::megatron
