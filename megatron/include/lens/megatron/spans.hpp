// The Megatron span catalogue the trainer emits (docs/megatron.md, "The span hierarchy"): the
// documented hierarchy with the group of each span and its parent, plus megatron.first_iteration
// and megatron.data.next_batch, and the documented span attribute keys. A span whose group is off
// is not created, so its children nest under the nearest enabled ancestor.
// megatron.train_step is the one span marked `new_trace`: each iteration is the root of its own
// trace, linked to its logical parent (megatron.train), with a trace id every rank derives alike
// (lens::TraceSeed) — so "iteration N" is one trace across all ranks, a ratio sampler keeps or
// drops an iteration on every rank alike, and a long run is not one endless trace.
// megatron.first_iteration therefore covers the first iteration under megatron.train without
// being its step's parent. Evaluation runs the forward pass too, so there
// megatron.layer.forward and megatron.p2p.{recv,send}_forward nest under megatron.evaluate.step.
// Thread-safety: constants and an immutable table.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lens/collectives.hpp"
#include "lens/megatron/span_groups.hpp"
#include "lens/span_site.hpp"

namespace lens::megatron::spans {

// The documented span attribute keys.
namespace attributes {
inline constexpr std::string_view kModelType = "megatron.model_type";    // pretrain
inline constexpr std::string_view kTrainIters = "megatron.train_iters";  // pretrain, train
inline constexpr std::string_view kGlobalBatchSize = "megatron.global_batch_size";  // pretrain
inline constexpr std::string_view kIteration = "megatron.iteration";  // train_step, save_checkpoint
inline constexpr std::string_view kLoss = "megatron.loss";            // train_step
inline constexpr std::string_view kGradNorm = "megatron.grad_norm";   // train_step, optimizer_step
inline constexpr std::string_view kLearningRate = "megatron.learning_rate";  // train_step
inline constexpr std::string_view kNumMicrobatches =
    "megatron.num_microbatches";                                               // forward_backward
inline constexpr std::string_view kMicrobatchId = "megatron.microbatch_id";    // microbatch.forward
inline constexpr std::string_view kEvalIters = "megatron.eval_iters";          // evaluate
inline constexpr std::string_view kEvalIteration = "megatron.eval_iteration";  // evaluate.step
inline constexpr std::string_view kUpdateSuccessful = "megatron.update_successful";  // optimizer
inline constexpr std::string_view kLayerNumber = "megatron.layer_number";  // layer.forward
// On megatron.pp.recv_forward.linked.
inline constexpr std::string_view kPipelineRank = "dl.pipeline_parallel.rank";
inline constexpr std::string_view kDlMicrobatchId = "dl.microbatch_id";
}  // namespace attributes

// A span of the catalogue: its site (name, group, the keys it sets; what LENS_SPAN takes) and its
// place in the hierarchy.
struct SpanDef : SpanSite {
  std::string_view parent;  // empty for a root
  // Starts a trace of its own, linked to `parent` instead of being its child.
  bool new_trace = false;
};

// The keys each span sets.
namespace keys {
using namespace attributes;
inline constexpr std::string_view kPretrain[] = {kModelType, kTrainIters, kGlobalBatchSize};
inline constexpr std::string_view kTrain[] = {kTrainIters};
inline constexpr std::string_view kIterationOnly[] = {kIteration};
inline constexpr std::string_view kTrainStep[] = {kIteration, kLoss, kGradNorm, kLearningRate};
inline constexpr std::string_view kForwardBackward[] = {kNumMicrobatches};
inline constexpr std::string_view kMicrobatchForward[] = {kMicrobatchId};
inline constexpr std::string_view kLayerForward[] = {kLayerNumber};
inline constexpr std::string_view kPpRecvForwardLinked[] = {kPipelineRank, kDlMicrobatchId};
inline constexpr std::string_view kOptimizerStep[] = {kUpdateSuccessful, kGradNorm};
inline constexpr std::string_view kEvaluate[] = {kEvalIters};
inline constexpr std::string_view kEvaluateStep[] = {kEvalIteration};
// The gradient all-reduce as a counted collective (docs/distributed.md, "Counted collectives").
inline constexpr std::string_view kGradSyncStart[] = {
    ::lens::collective_attributes::kGroup, ::lens::collective_attributes::kGroupRanks,
    ::lens::collective_attributes::kOperation, ::lens::collective_attributes::kBytes,
    ::lens::collective_attributes::kSeq};
inline constexpr std::string_view kGradSyncFinish[] = {::lens::collective_attributes::kGroup,
                                                       ::lens::collective_attributes::kOperation,
                                                       ::lens::collective_attributes::kSeq};
}  // namespace keys

// clang-format off
inline constexpr SpanDef kPretrain{{"megatron.pretrain", groups::kJob, keys::kPretrain}, ""};
inline constexpr SpanDef kModelInit{{"megatron.model_init", groups::kModelInit}, "megatron.pretrain"};
inline constexpr SpanDef kLoadCheckpoint{{"megatron.load_checkpoint", groups::kLoadCheckpoint}, "megatron.pretrain"};
inline constexpr SpanDef kLoadCheckpointIoRead{{"megatron.load_checkpoint.io_read", groups::kLoadCheckpoint}, "megatron.load_checkpoint"};
inline constexpr SpanDef kTrain{{"megatron.train", groups::kJob, keys::kTrain}, "megatron.pretrain"};
inline constexpr SpanDef kFirstIteration{{"megatron.first_iteration", groups::kFirstIteration, keys::kIterationOnly}, "megatron.train"};
inline constexpr SpanDef kTrainStep{{"megatron.train_step", groups::kStep, keys::kTrainStep}, "megatron.train", true};
inline constexpr SpanDef kForwardBackward{{"megatron.forward_backward", groups::kForwardBackward, keys::kForwardBackward}, "megatron.train_step"};
inline constexpr SpanDef kMicrobatchForward{{"megatron.microbatch.forward", groups::kMicrobatch, keys::kMicrobatchForward}, "megatron.forward_backward"};
inline constexpr SpanDef kDataNextBatch{{"megatron.data.next_batch", groups::kDataLoading}, "megatron.microbatch.forward"};
inline constexpr SpanDef kLayerForward{{"megatron.layer.forward", groups::kLayer, keys::kLayerForward}, "megatron.microbatch.forward"};
inline constexpr SpanDef kLayerSelfAttention{{"megatron.layer.self_attention", groups::kLayer}, "megatron.layer.forward"};
inline constexpr SpanDef kLayerMlp{{"megatron.layer.mlp", groups::kLayer}, "megatron.layer.forward"};
inline constexpr SpanDef kMicrobatchBackward{{"megatron.microbatch.backward", groups::kMicrobatch}, "megatron.forward_backward"};
inline constexpr SpanDef kPpRecvForwardLinked{{"megatron.pp.recv_forward.linked", groups::kCommunication, keys::kPpRecvForwardLinked}, "megatron.forward_backward"};
inline constexpr SpanDef kP2pRecvForward{{"megatron.p2p.recv_forward", groups::kCommunication}, "megatron.forward_backward"};
inline constexpr SpanDef kP2pSendForward{{"megatron.p2p.send_forward", groups::kCommunication}, "megatron.forward_backward"};
inline constexpr SpanDef kP2pRecvBackward{{"megatron.p2p.recv_backward", groups::kCommunication}, "megatron.forward_backward"};
inline constexpr SpanDef kP2pSendBackward{{"megatron.p2p.send_backward", groups::kCommunication}, "megatron.forward_backward"};
inline constexpr SpanDef kActivationOffload{{"megatron.activation.offload", groups::kActivationOffload}, "megatron.forward_backward"};
inline constexpr SpanDef kActivationReload{{"megatron.activation.reload", groups::kActivationOffload}, "megatron.forward_backward"};
inline constexpr SpanDef kGradSyncStart{{"megatron.grad_sync.start", groups::kCommunication, keys::kGradSyncStart}, "megatron.train_step"};
inline constexpr SpanDef kGradSyncFinish{{"megatron.grad_sync.finish", groups::kCommunication, keys::kGradSyncFinish}, "megatron.train_step"};
inline constexpr SpanDef kOptimizerStep{{"megatron.optimizer_step", groups::kOptimizer, keys::kOptimizerStep}, "megatron.train_step"};
inline constexpr SpanDef kSaveCheckpoint{{"megatron.save_checkpoint", groups::kCheckpoint, keys::kIterationOnly}, "megatron.train"};
inline constexpr SpanDef kSaveCheckpointStateDict{{"megatron.save_checkpoint.state_dict", groups::kCheckpoint}, "megatron.save_checkpoint"};
inline constexpr SpanDef kSaveCheckpointIoWrite{{"megatron.save_checkpoint.io_write", groups::kCheckpoint}, "megatron.save_checkpoint"};
inline constexpr SpanDef kEvaluate{{"megatron.evaluate", groups::kEvaluate, keys::kEvaluate}, "megatron.train"};
inline constexpr SpanDef kEvaluateStep{{"megatron.evaluate.step", groups::kEvaluate, keys::kEvaluateStep}, "megatron.evaluate"};
// clang-format on

// Every span above, parents before children.
const std::vector<SpanDef>& catalogue();

// The names of the catalogue's spans whose group is in `enabled_groups`.
std::set<std::string> span_names_for(const std::set<std::string>& enabled_groups);

// The parent a span gets when only `enabled_groups` are on: its nearest ancestor whose group is
// enabled; empty when none is (the span is then a root). Unknown names give an empty string.
// For a `new_trace` span this is the span it links to (it is itself a root).
std::string effective_parent(std::string_view span_name,
                             const std::set<std::string>& enabled_groups);

}  // namespace lens::megatron::spans
