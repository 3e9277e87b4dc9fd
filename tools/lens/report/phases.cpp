// Span name to phase mapping (see phases.hpp).
#include "report/phases.hpp"

#include <algorithm>

namespace lens::report {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

std::string_view phase_name(Phase phase) {
  static constexpr std::array<std::string_view, kPhaseCount> kNames = {
      "forward_backward", "optimizer",  "communication", "pipeline",
      "data_loading",     "checkpoint", "evaluation",    "other"};
  return kNames[std::min(index_of(phase), index_of(Phase::other))];
}

std::optional<Phase> phase_of(std::string_view name) {
  if (name == "megatron.forward_backward" || starts_with(name, "megatron.microbatch.") ||
      starts_with(name, "megatron.layer.") || starts_with(name, "megatron.activation.")) {
    return Phase::forward_backward;
  }
  if (name == "megatron.optimizer_step") return Phase::optimizer;
  if (starts_with(name, "megatron.grad_sync.")) return Phase::communication;
  if (starts_with(name, "megatron.p2p.") || starts_with(name, "megatron.pp.")) {
    return Phase::pipeline;
  }
  if (starts_with(name, "megatron.data.")) return Phase::data_loading;
  if (starts_with(name, "megatron.save_checkpoint") ||
      starts_with(name, "megatron.load_checkpoint")) {
    return Phase::checkpoint;
  }
  if (starts_with(name, "megatron.evaluate")) return Phase::evaluation;
  return std::nullopt;
}

}  // namespace lens::report
