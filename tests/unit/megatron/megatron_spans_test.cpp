// The Megatron span catalogue (docs/megatron.md, "The span hierarchy"): a well-formed tree over the
// vocabulary's groups, the exact span set each preset enables, and the parent a span gets when its
// ancestors' groups are off.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "lens/megatron/spans.hpp"

namespace lens::megatron {
namespace {

std::set<std::string> preset(std::string_view name) {
  return span_group_presets().at(std::string(name));
}

TEST(MegatronSpans, CatalogueIsATreeOverTheVocabularysGroups) {
  std::set<std::string> seen;
  for (const spans::SpanDef& span : spans::catalogue()) {
    EXPECT_EQ(all_span_groups().count(std::string(span.group)), 1U) << span.name;
    if (!span.parent.empty()) {
      EXPECT_EQ(seen.count(std::string(span.parent)), 1U)
          << span.name << " comes before its parent " << span.parent;
    }
    EXPECT_TRUE(seen.emplace(span.name).second) << "duplicate " << span.name;
  }
  EXPECT_EQ(seen.size(), 29U);
}

TEST(MegatronSpans, DefaultPresetEnablesTheJobCheckpointEvaluateAndFirstIterationSpans) {
  EXPECT_EQ(
      spans::span_names_for(preset(groups::kPresetDefault)),
      (std::set<std::string>{"megatron.pretrain", "megatron.train", "megatron.first_iteration",
                             "megatron.save_checkpoint", "megatron.save_checkpoint.state_dict",
                             "megatron.save_checkpoint.io_write", "megatron.evaluate",
                             "megatron.evaluate.step"}));
}

TEST(MegatronSpans, PerStepPresetAddsStepPhasesCommunicationAndDataLoading) {
  EXPECT_EQ(spans::span_names_for(preset(groups::kPresetPerStep)),
            (std::set<std::string>{"megatron.pretrain",
                                   "megatron.model_init",
                                   "megatron.load_checkpoint",
                                   "megatron.load_checkpoint.io_read",
                                   "megatron.train",
                                   "megatron.first_iteration",
                                   "megatron.train_step",
                                   "megatron.forward_backward",
                                   "megatron.data.next_batch",
                                   "megatron.pp.recv_forward.linked",
                                   "megatron.p2p.recv_forward",
                                   "megatron.p2p.send_forward",
                                   "megatron.p2p.recv_backward",
                                   "megatron.p2p.send_backward",
                                   "megatron.grad_sync.start",
                                   "megatron.grad_sync.finish",
                                   "megatron.optimizer_step",
                                   "megatron.save_checkpoint",
                                   "megatron.save_checkpoint.state_dict",
                                   "megatron.save_checkpoint.io_write",
                                   "megatron.evaluate",
                                   "megatron.evaluate.step"}));
}

TEST(MegatronSpans, AllEnablesEverySpan) {
  EXPECT_EQ(spans::span_names_for(all_span_groups()).size(), spans::catalogue().size());
}

TEST(MegatronSpans, ASpanNestsUnderItsNearestEnabledAncestor) {
  const auto per_step = preset(groups::kPresetPerStep);
  // microbatch is off under per_step: the batch fetch nests under forward_backward.
  EXPECT_EQ(spans::effective_parent("megatron.data.next_batch", per_step),
            "megatron.forward_backward");
  EXPECT_EQ(spans::effective_parent("megatron.data.next_batch", all_span_groups()),
            "megatron.microbatch.forward");
  EXPECT_EQ(spans::effective_parent("megatron.optimizer_step", per_step), "megatron.train_step");
  // Under default, step is off: a checkpoint save is still a child of the training span.
  EXPECT_EQ(spans::effective_parent("megatron.save_checkpoint", preset(groups::kPresetDefault)),
            "megatron.train");
  EXPECT_EQ(spans::effective_parent("megatron.train_step", std::set<std::string>{"step"}), "");
  EXPECT_EQ(spans::effective_parent("megatron.pretrain", all_span_groups()), "");
  EXPECT_EQ(spans::effective_parent("megatron.nonexistent", all_span_groups()), "");
}

}  // namespace
}  // namespace lens::megatron
