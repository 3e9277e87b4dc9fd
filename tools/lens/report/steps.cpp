// Steps and their phase split (see steps.hpp).
#include "report/steps.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>

namespace lens::report {
namespace {

// Bounds the walk on malformed input (a parent cycle).
constexpr int kMaxDepth = 256;

std::string key(const std::string& trace_id, const std::string& span_id) {
  return trace_id + '/' + span_id;
}

double to_ms(std::int64_t nanos) { return static_cast<double>(nanos) / 1e6; }

class SpanTree {
 public:
  explicit SpanTree(const RankData& rank) : rank_(rank) {
    for (std::size_t i = 0; i < rank.spans.size(); ++i) {
      const SpanRecord& span = rank.spans[i];
      by_id_.emplace(key(span.trace_id, span.span_id), i);
      if (!span.parent_span_id.empty()) {
        children_[key(span.trace_id, span.parent_span_id)].push_back(i);
      }
    }
    for (auto& [parent, list] : children_) {
      std::sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
        return rank.spans[a].start_ns < rank.spans[b].start_ns;
      });
    }
  }

  const std::vector<std::size_t>& children(std::size_t span) const {
    static const std::vector<std::size_t> kNone;
    const SpanRecord& s = rank_.spans[span];
    auto it = children_.find(key(s.trace_id, s.span_id));
    return it == children_.end() ? kNone : it->second;
  }

  std::optional<std::size_t> parent(std::size_t span) const {
    const SpanRecord& s = rank_.spans[span];
    if (s.parent_span_id.empty()) return std::nullopt;
    auto it = by_id_.find(key(s.trace_id, s.parent_span_id));
    if (it == by_id_.end()) return std::nullopt;
    return it->second;
  }

 private:
  const RankData& rank_;
  std::unordered_map<std::string, std::size_t> by_id_;
  std::unordered_map<std::string, std::vector<std::size_t>> children_;
};

// Gives [lo, hi) of `span` to the phases: children take their (clipped) share first, the rest is
// the span's own phase.
void split(const RankData& rank, const SpanTree& tree, std::size_t span, std::int64_t lo,
           std::int64_t hi, Phase inherited, int depth, Step& step) {
  const std::optional<Phase> own = phase_of(rank.spans[span].name);
  const Phase phase = depth == 0 ? Phase::other : own.value_or(inherited);
  if (depth > 0 && own && *own != inherited) step.phase_spans.emplace_back(span, phase);
  std::int64_t covered = lo;
  std::int64_t self = 0;
  if (depth < kMaxDepth) {
    for (const std::size_t child : tree.children(span)) {
      const std::int64_t child_lo = std::max(rank.spans[child].start_ns, covered);
      const std::int64_t child_hi = std::min(rank.spans[child].end_ns, hi);
      if (child_hi <= child_lo) continue;
      self += child_lo - covered;
      split(rank, tree, child, child_lo, child_hi, phase, depth + 1, step);
      covered = child_hi;
    }
  }
  self += hi - covered;
  step.phase_ms[index_of(phase)] += to_ms(self);
}

// True when a checkpoint/evaluation span has no ancestor that is a step or of its own phase.
bool outermost_outside_step(const RankData& rank, const SpanTree& tree, std::size_t span,
                            Phase phase) {
  std::optional<std::size_t> ancestor = tree.parent(span);
  for (int depth = 0; ancestor && depth < kMaxDepth; ++depth) {
    const std::string& name = rank.spans[*ancestor].name;
    if (name == kStepSpanName || phase_of(name) == phase) return false;
    ancestor = tree.parent(*ancestor);
  }
  return true;
}

// Each step's gap_ms: the outside checkpoint/evaluation time since the previous iteration's
// step ended.
void fill_gaps(const RankData& rank, const RankSteps& out, std::vector<Step>& steps) {
  for (std::size_t i = 1; i < steps.size(); ++i) {
    const Step& previous = steps[i - 1];
    Step& step = steps[i];
    // (An iteration of INT64_MAX has no next one: no overflow.)
    if (!step.iteration || !previous.iteration ||
        *previous.iteration == std::numeric_limits<std::int64_t>::max() ||
        *previous.iteration + 1 != *step.iteration || step.start_ns <= previous.end_ns) {
      continue;
    }
    for (const std::size_t span : out.outside_spans) {
      const std::int64_t lo = std::max(rank.spans[span].start_ns, previous.end_ns);
      const std::int64_t hi = std::min(rank.spans[span].end_ns, step.start_ns);
      if (hi <= lo) continue;
      const Phase phase = phase_of(rank.spans[span].name).value_or(Phase::other);
      // Unsigned (hi > lo): malformed input must not overflow.
      step.gap_ms[index_of(phase)] +=
          static_cast<double>(static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo)) /
          1e6;
    }
  }
}

}  // namespace

RankSteps find_steps(const RankData& rank) {
  const SpanTree tree(rank);
  RankSteps out;
  std::vector<Step> steps;
  for (std::size_t i = 0; i < rank.spans.size(); ++i) {
    const SpanRecord& span = rank.spans[i];
    if (span.name != kStepSpanName) {
      const std::optional<Phase> phase = phase_of(span.name);
      if (phase && (*phase == Phase::checkpoint || *phase == Phase::evaluation) &&
          outermost_outside_step(rank, tree, i, *phase)) {
        out.outside_spans.push_back(i);
        out.outside_ms[index_of(*phase)] += to_ms(span.end_ns - span.start_ns);
      }
      continue;
    }
    Step step;
    step.iteration = int_attribute(span.attributes, "megatron.iteration");
    step.span = i;
    step.start_ns = span.start_ns;
    step.end_ns = span.end_ns;
    step.duration_ms = to_ms(span.end_ns - span.start_ns);
    split(rank, tree, i, span.start_ns, span.end_ns, Phase::other, 0, step);
    steps.push_back(std::move(step));
  }
  std::stable_sort(steps.begin(), steps.end(),
                   [](const Step& a, const Step& b) { return a.start_ns < b.start_ns; });
  // A repeated iteration (a restart from a checkpoint) keeps its latest run.
  std::map<std::int64_t, std::size_t> last_of;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].iteration) last_of[*steps[i].iteration] = i;
  }
  fill_gaps(rank, out, steps);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!steps[i].iteration) {
      ++out.without_iteration;
    } else if (last_of[*steps[i].iteration] != i) {
      ++out.repeated;
      continue;
    }
    out.steps.push_back(std::move(steps[i]));
  }
  return out;
}

}  // namespace lens::report
