// The hang watchdog's view of the native pipelines (see hang_sources.hpp).
#include "telemetry/hang_sources.hpp"

#include <cstdio>
#include <memory>
#include <optional>

#include "lens/collectives.hpp"
#include "lens/log.hpp"

namespace lens::telemetry {
namespace {

std::vector<OpenStack> open_stacks(const native::SpanRegistry& spans,
                                   const native::SharedTickCalibration& clock) {
  std::vector<std::shared_ptr<native::ThreadSpans>> threads;
  spans.copy_threads(threads);
  std::vector<OpenStack> stacks;
  std::vector<native::ThreadSpans::OpenSpan> open;
  for (const auto& thread : threads) {
    open.clear();
    thread->snapshot_open(open, /*with_extras=*/false);
    if (open.empty()) continue;
    const std::uint64_t now = native::read_ticks();
    OpenStack stack;
    for (const native::ThreadSpans::OpenSpan& span : open) {
      const native::RecordHeader& header = span.data.record;
      stack.push_back({std::string(native::record_name(header, span.data.payload, nullptr)),
                       static_cast<double>(clock.nanos_between(header.start_ticks, now)) / 1e9});
    }
    stacks.push_back(std::move(stack));
  }
  return stacks;
}

// Every counted group's state when the report is made (lens/collectives.hpp).
struct GroupStates {
  std::vector<std::string> names;
  std::vector<std::string> ranks;  // "0-3"
  std::vector<std::string> operations;
  std::vector<std::int64_t> seqs;
  std::vector<std::int64_t> bytes;
  std::vector<std::int64_t> finished_seqs;
  std::vector<std::string> finished_operations;
  std::vector<double> open_s;  // how long the newest has been open; 0 when finished
};

// Seconds between two tick readings: with the pipelines' calibration when traces are on, else
// with one of the watchdog's own (measured once, at the first report: 2 ms of the watchdog
// thread's time).
class TickSeconds {
 public:
  explicit TickSeconds(std::shared_ptr<native::SharedTickCalibration> shared)
      : shared_(std::move(shared)) {}
  double between(std::uint64_t start, std::uint64_t end) {
    if (shared_ != nullptr) return static_cast<double>(shared_->nanos_between(start, end)) / 1e9;
    if (!own_) own_.emplace();
    return static_cast<double>(own_->nanos_between(start, end)) / 1e9;
  }

 private:
  std::shared_ptr<native::SharedTickCalibration> shared_;
  std::optional<native::TickCalibration> own_;
};

GroupStates group_states(TickSeconds& clock) {
  GroupStates out;
  const std::uint64_t now = native::read_ticks();
  for (const CollectiveGroup* group : collective_groups()) {
    const CollectiveGroup::State state = group->state();
    out.names.push_back(group->name());
    out.ranks.push_back(rank_ranges(group->ranks()));
    out.operations.push_back(state.operation != nullptr ? state.operation : "");
    out.seqs.push_back(static_cast<std::int64_t>(state.seq));
    out.bytes.push_back(static_cast<std::int64_t>(state.bytes));
    out.finished_seqs.push_back(static_cast<std::int64_t>(state.finished_seq));
    out.finished_operations.push_back(state.finished_operation != nullptr ? state.finished_operation
                                                                          : "");
    out.open_s.push_back(state.inside() ? clock.between(state.entered_ticks, now) : 0.0);
  }
  return out;
}

// "; dp all_reduce #12 open 41.8 s; pp: last finished send #24" (empty without groups).
std::string groups_text(const GroupStates& groups) {
  std::string text;
  for (std::size_t i = 0; i < groups.names.size(); ++i) {
    if (groups.seqs[i] == 0) continue;
    char open[32];
    std::snprintf(open, sizeof(open), "%.1f s", groups.open_s[i]);
    text += "; " + groups.names[i];
    if (groups.finished_seqs[i] < groups.seqs[i]) {
      text += " in " + groups.operations[i] + " #" + std::to_string(groups.seqs[i]) +
              (groups.open_s[i] > 0.0 ? std::string(" for ") + open : std::string());
    } else {
      text += ": last finished " + groups.finished_operations[i] + " #" +
              std::to_string(groups.finished_seqs[i]);
    }
  }
  return text;
}

void write_record(native::LogRegistry& logs, const HangEvent& event,
                  const std::vector<OpenStack>& stacks, const std::string& body,
                  const GroupStates& groups) {
  const auto report = static_cast<std::int64_t>(event.report);
  const auto steps = static_cast<std::int64_t>(event.steps);
  if (event.kind == HangEvent::Kind::resumed) {
    native::write_log(logs, static_cast<int>(log::Level::info), body,
                      {{"lens.hang.stalled_s", event.stalled_s},
                       {"lens.hang.reports", report},
                       {"lens.hang.steps", steps}},
                      "lens.hang.resumed");
    return;
  }
  // The stuck thread's stack as parallel arrays; the other threads' as text.
  std::vector<std::string> names;
  std::vector<double> open_s;
  std::vector<std::string> others;
  const OpenStack* stuck = stuck_stack(stacks);
  for (const OpenStack& stack : stacks) {
    if (&stack != stuck && !stack.empty()) others.push_back(stack_text(stack));
  }
  if (stuck != nullptr) {
    for (const OpenSpanAge& span : *stuck) {
      names.push_back(span.name);
      open_s.push_back(span.open_s);
    }
  }
  const std::string innermost = stuck != nullptr ? stuck->back().name : std::string();
  const double innermost_open_s = stuck != nullptr ? stuck->back().open_s : 0.0;
  native::write_log(logs, static_cast<int>(log::Level::warn), body,
                    {{"lens.hang.stalled_s", event.stalled_s},
                     {"lens.hang.timeout_s", event.timeout_s},
                     {"lens.hang.report", report},
                     {"lens.hang.steps", steps},
                     {"lens.hang.span", innermost},
                     {"lens.hang.span_open_s", innermost_open_s},
                     {"lens.hang.stack", names},
                     {"lens.hang.stack_open_s", open_s},
                     {"lens.hang.other_threads", others},
                     {"lens.hang.startup", event.startup},
                     {"lens.hang.iteration", current_iteration()},
                     {"lens.hang.collective.group", groups.names},
                     {"lens.hang.collective.group_ranks", groups.ranks},
                     {"lens.hang.collective.op", groups.operations},
                     {"lens.hang.collective.seq", groups.seqs},
                     {"lens.hang.collective.bytes", groups.bytes},
                     {"lens.hang.collective.finished_seq", groups.finished_seqs},
                     {"lens.hang.collective.finished_op", groups.finished_operations},
                     {"lens.hang.collective.open_s", groups.open_s}},
                    "lens.hang");
}

}  // namespace

HangWatchdog::Sources hang_sources(int rank, std::shared_ptr<native::SpanRegistry> spans,
                                   std::shared_ptr<native::SharedTickCalibration> clock,
                                   std::shared_ptr<native::LogRegistry> logs) {
  HangWatchdog::Sources sources;
  sources.open_stacks = [spans, clock] {
    if (spans == nullptr || clock == nullptr) return std::vector<OpenStack>();
    return open_stacks(*spans, *clock);
  };
  auto seconds = std::make_shared<TickSeconds>(clock);  // used on the watchdog thread only
  sources.report = [rank, logs, seconds](const HangEvent& event,
                                         const std::vector<OpenStack>& stacks) {
    const GroupStates groups =
        event.kind == HangEvent::Kind::hang ? group_states(*seconds) : GroupStates();
    const std::string body = event_text(event, stacks) + groups_text(groups);
    std::fprintf(stderr, "lens: rank %d: %s\n", rank, body.c_str());
    if (logs != nullptr) write_record(*logs, event, stacks, body, groups);
  };
  return sources;
}

}  // namespace lens::telemetry
