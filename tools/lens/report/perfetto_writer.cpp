// Chrome trace-event JSON (see perfetto_writer.hpp).
#include "report/perfetto_writer.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "report/phases.hpp"

namespace lens::report {
namespace {

// A string attribute value past kMaxTraceArgBytes is cut (at a UTF-8 boundary) and says how long
// it was: a 1 GB value was copied whole into trace.json.
nlohmann::json bounded_value(const nlohmann::json& value) {
  if (!value.is_string()) return value;
  const auto& text = value.get_ref<const std::string&>();
  if (text.size() <= kMaxTraceArgBytes) return value;
  std::size_t cut = kMaxTraceArgBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes)";
}

using nlohmann::json;

double micros_since(std::int64_t nanos, std::int64_t t0) {
  return static_cast<double>(nanos - t0) / 1000.0;
}

// The thread (1-based) of each span: the first whose open spans all contain it.
std::vector<int> assign_threads(const std::vector<SpanRecord>& spans,
                                std::vector<std::size_t>& order) {
  order.resize(spans.size());
  for (std::size_t i = 0; i < spans.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (spans[a].start_ns != spans[b].start_ns) return spans[a].start_ns < spans[b].start_ns;
    return spans[a].end_ns > spans[b].end_ns;  // the enclosing span first
  });
  std::vector<int> thread(spans.size(), 1);
  std::vector<std::vector<std::int64_t>> open_ends;  // per thread, a stack of end times
  for (const std::size_t i : order) {
    std::size_t t = 0;
    for (;; ++t) {
      if (t == open_ends.size()) open_ends.emplace_back();
      auto& stack = open_ends[t];
      while (!stack.empty() && stack.back() <= spans[i].start_ns) stack.pop_back();
      if (stack.empty() || stack.back() >= spans[i].end_ns) break;
    }
    open_ends[t].push_back(spans[i].end_ns);
    thread[i] = static_cast<int>(t) + 1;
  }
  return thread;
}

void write_event(std::ostream& out, const json& event, bool& first) {
  out << (first ? "\n" : ",\n") << event.dump(-1, ' ', false, json::error_handler_t::replace);
  first = false;
}

std::string short_metric_name(const std::string& name) {
  constexpr std::string_view kPrefix = "megatron.training.";
  return name.rfind(kPrefix, 0) == 0 ? name.substr(kPrefix.size()) : name;
}

}  // namespace

std::uint64_t write_perfetto(const RunAnalysis& analysis, std::ostream& out,
                             const RankSelection& ranks, std::uint64_t max_spans) {
  const std::int64_t t0 = analysis.t0_ns;
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  bool first = true;
  std::uint64_t kept_ranks = 0;
  for (const auto& [rank, data] : analysis.data.ranks) kept_ranks += ranks.keeps(rank) ? 1 : 0;
  const std::uint64_t share = kept_ranks == 0 ? max_spans : max_spans / kept_ranks;
  std::uint64_t left_out = 0;
  for (const auto& [rank, data] : analysis.data.ranks) {
    if (!ranks.keeps(rank)) continue;
    const int pid = rank + 1;
    const std::string label = "rank " + std::to_string(rank);
    write_event(out,
                {{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", label}}}},
                first);
    write_event(out,
                {{"ph", "M"},
                 {"pid", pid},
                 {"name", "process_sort_index"},
                 {"args", {{"sort_index", rank}}}},
                first);
    std::vector<std::size_t> order;
    const std::vector<int> threads = assign_threads(data.spans, order);
    const int thread_count =
        threads.empty() ? 1 : *std::max_element(threads.begin(), threads.end());
    for (int tid = 1; tid <= thread_count; ++tid) {
      write_event(
          out,
          {{"ph", "M"},
           {"pid", pid},
           {"tid", tid},
           {"name", "thread_name"},
           {"args", {{"name", tid == 1 ? label : label + " overlap " + std::to_string(tid - 1)}}}},
          first);
    }
    if (order.size() > share) {
      left_out += order.size() - share;
      order.resize(share);  // the earliest (order is by start time)
    }
    for (const std::size_t i : order) {
      const SpanRecord& span = data.spans[i];
      json args = json::object();
      for (const auto& [key, value] : span.attributes) args[key] = bounded_value(value);
      args["trace_id"] = span.trace_id;
      args["span_id"] = span.span_id;
      if (!span.parent_span_id.empty()) args["parent_span_id"] = span.parent_span_id;
      if (span.error) args["status"] = "ERROR";
      const std::optional<Phase> phase = phase_of(span.name);
      write_event(out,
                  {{"ph", "X"},
                   {"pid", pid},
                   {"tid", threads[i]},
                   {"name", span.name},
                   {"cat", phase ? std::string(phase_name(*phase)) : std::string("span")},
                   {"ts", micros_since(span.start_ns, t0)},
                   {"dur", static_cast<double>(span.end_ns - span.start_ns) / 1000.0},
                   {"args", std::move(args)}},
                  first);
    }
    for (const auto& [name, points] : data.gauges) {
      const std::string counter = short_metric_name(name);
      for (const GaugePoint& point : points) {
        write_event(out,
                    {{"ph", "C"},
                     {"pid", pid},
                     {"name", counter},
                     {"ts", micros_since(point.time_ns, t0)},
                     {"args", {{"value", point.value}}}},
                    first);
      }
    }
  }
  out << "\n]}\n";
  return left_out;
}

}  // namespace lens::report
