// The hang watchdog's view of the native pipelines (see hang_sources.hpp).
#include "telemetry/hang_sources.hpp"

#include <cstdio>

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
      stack.push_back(
          {std::string(native::record_name(header, span.data.payload, nullptr)),
           static_cast<double>(clock.nanos_between(header.start_ticks, now)) / 1e9});
    }
    stacks.push_back(std::move(stack));
  }
  return stacks;
}

void write_record(native::LogRegistry& logs, const HangEvent& event,
                  const std::vector<OpenStack>& stacks, const std::string& body) {
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
                     {"lens.hang.other_threads", others}},
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
  sources.report = [rank, logs](const HangEvent& event, const std::vector<OpenStack>& stacks) {
    const std::string body = event_text(event, stacks);
    std::fprintf(stderr, "lens: rank %d: %s\n", rank, body.c_str());
    if (logs != nullptr) write_record(*logs, event, stacks, body);
  };
  return sources;
}

}  // namespace lens::telemetry
