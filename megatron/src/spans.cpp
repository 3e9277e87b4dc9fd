// The Megatron span catalogue (lens/megatron/spans.hpp).
#include "lens/megatron/spans.hpp"

namespace lens::megatron::spans {

const std::vector<SpanDef>& catalogue() {
  static const std::vector<SpanDef> all = {
      kPretrain,
      kModelInit,
      kLoadCheckpoint,
      kLoadCheckpointIoRead,
      kTrain,
      kFirstIteration,
      kTrainStep,
      kForwardBackward,
      kMicrobatchForward,
      kDataNextBatch,
      kLayerForward,
      kLayerSelfAttention,
      kLayerMlp,
      kMicrobatchBackward,
      kPpRecvForwardLinked,
      kP2pRecvForward,
      kP2pSendForward,
      kP2pRecvBackward,
      kP2pSendBackward,
      kActivationOffload,
      kActivationReload,
      kGradSyncStart,
      kGradSyncFinish,
      kOptimizerStep,
      kSaveCheckpoint,
      kSaveCheckpointStateDict,
      kSaveCheckpointIoWrite,
      kEvaluate,
      kEvaluateStep,
  };
  return all;
}

std::set<std::string> span_names_for(const std::set<std::string>& enabled_groups) {
  std::set<std::string> out;
  for (const SpanDef& span : catalogue()) {
    if (enabled_groups.count(std::string(span.group)) != 0) out.emplace(span.name);
  }
  return out;
}

namespace {
const SpanDef* find(std::string_view name) {
  for (const SpanDef& span : catalogue()) {
    if (span.name == name) return &span;
  }
  return nullptr;
}
}  // namespace

std::string effective_parent(std::string_view span_name,
                             const std::set<std::string>& enabled_groups) {
  const SpanDef* span = find(span_name);
  if (span == nullptr) return {};
  for (const SpanDef* parent = find(span->parent); parent != nullptr;
       parent = find(parent->parent)) {
    if (enabled_groups.count(std::string(parent->group)) != 0) return std::string(parent->name);
  }
  return {};
}

}  // namespace lens::megatron::spans
