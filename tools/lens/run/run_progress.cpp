// Following traces.jsonl for the run's progress (see run_progress.hpp).
#include "run/run_progress.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

namespace lens::cli {
namespace {

using nlohmann::json;

// An OTLP JSON integer attribute value ("intValue" is a string in the JSON mapping).
std::optional<std::int64_t> int_value(const json& value) {
  const auto it = value.find("intValue");
  if (it == value.end()) return std::nullopt;
  try {
    return it->is_string() ? std::stoll(it->get<std::string>()) : it->get<std::int64_t>();
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<std::int64_t> attribute(const json& attributes, const char* key) {
  if (!attributes.is_array()) return std::nullopt;
  for (const json& attribute : attributes) {
    if (attribute.value("key", "") == key && attribute.contains("value")) {
      return int_value(attribute["value"]);
    }
  }
  return std::nullopt;
}

std::int64_t nanos(const json& span, const char* key) {
  const auto it = span.find(key);
  if (it == span.end()) return 0;
  try {
    return it->is_string() ? std::stoll(it->get<std::string>()) : it->get<std::int64_t>();
  } catch (...) {
    return 0;
  }
}

// end - start in ms; unsigned, so malformed timestamps do not overflow; 0 when end < start.
double duration_ms(std::int64_t start, std::int64_t end) {
  if (end < start) return 0.0;
  return static_cast<double>(static_cast<std::uint64_t>(end) - static_cast<std::uint64_t>(start)) /
         1e6;
}

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

bool is_communication(const std::string& name) {
  return starts_with(name, "megatron.grad_sync.") || starts_with(name, "megatron.p2p.") ||
         starts_with(name, "megatron.pp.");
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

// Bounds the per-rank map of communication by trace when steps never arrive (sampled out).
constexpr std::size_t kMaxPendingTraces = 4096;

}  // namespace

void RunProgress::update() {
  traces_.read([this](std::string_view line) { consume(std::string(line)); });
}

void RunProgress::consume(const std::string& line) {
  const json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!request.is_object() || !request.contains("resourceSpans")) return;
  for (const json& resource_spans : request["resourceSpans"]) {
    const json attributes =
        resource_spans.value("resource", json::object()).value("attributes", json::array());
    const std::optional<std::int64_t> rank = attribute(attributes, "dl.rank");
    if (std::optional<std::int64_t> total = attribute(attributes, "megatron.train_iters")) {
      total_ = *total;
    }
    if (!rank) continue;
    RankWork& work = work_[static_cast<int>(*rank)];
    for (const json& scope : resource_spans.value("scopeSpans", json::array())) {
      for (const json& span : scope.value("spans", json::array())) {
        const std::string name = span.value("name", "");
        const std::string trace = span.value("traceId", "");
        const double ms =
            duration_ms(nanos(span, "startTimeUnixNano"), nanos(span, "endTimeUnixNano"));
        if (is_communication(name)) {
          if (work.communication_ms.size() >= kMaxPendingTraces) work.communication_ms.clear();
          work.communication_ms[trace] += ms;  // nested communication spans are rare here
          continue;
        }
        if (name != "megatron.train_step") continue;
        const auto pending = work.communication_ms.find(trace);
        const double communication = pending == work.communication_ms.end() ? 0.0 : pending->second;
        if (pending != work.communication_ms.end()) work.communication_ms.erase(pending);
        work.work_ms.push_back(std::max(0.0, ms - communication));
        work.step_ms.push_back(ms);
        if (work.work_ms.size() > kRecentSteps) {
          work.work_ms.pop_front();
          work.step_ms.pop_front();
        }
        const std::optional<std::int64_t> iteration =
            attribute(span.value("attributes", json::array()), "megatron.iteration");
        if (!iteration) continue;
        std::int64_t& reached = iterations_[static_cast<int>(*rank)];
        reached = std::max(reached, *iteration);
      }
    }
  }
}

std::optional<std::int64_t> RunProgress::slowest_iteration() const {
  if (static_cast<int>(iterations_.size()) < world_size_) return std::nullopt;
  std::int64_t slowest = iterations_.begin()->second;
  for (const auto& [rank, iteration] : iterations_) slowest = std::min(slowest, iteration);
  return slowest;
}

std::optional<RunProgress::WaitedFor> RunProgress::waited_for() const {
  if (!slowest_iteration()) return std::nullopt;
  std::vector<std::pair<int, double>> medians;
  std::vector<double> works;
  std::vector<double> steps;
  for (const auto& [rank, work] : work_) {
    if (work.work_ms.empty()) continue;
    const double median_work = median_of({work.work_ms.begin(), work.work_ms.end()});
    medians.emplace_back(rank, median_work);
    works.push_back(median_work);
    steps.push_back(median_of({work.step_ms.begin(), work.step_ms.end()}));
  }
  if (medians.size() < 2) return std::nullopt;
  const double across = median_of(works);
  const double margin = std::max(1.0, 0.05 * median_of(steps));
  const auto slowest =
      std::max_element(medians.begin(), medians.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  if (slowest->second - across <= margin) return std::nullopt;
  return WaitedFor{slowest->first, slowest->second - across};
}

std::string RunProgress::waited_for_text() const {
  const std::optional<WaitedFor> who = waited_for();
  if (!who) return {};
  char excess[32];
  std::snprintf(excess, sizeof(excess), "%.1f", who->excess_ms);
  return " (waiting for rank " + std::to_string(who->rank) + ": +" + excess + " ms per step)";
}

std::string RunProgress::bar(int width) const {
  const std::optional<std::int64_t> reached = slowest_iteration();
  if (!reached) return "waiting for the first step of every rank";
  const std::string who = waited_for_text();
  if (!total_ || *total_ <= 0) return "iteration " + std::to_string(*reached) + who;
  const std::string count =
      " " + std::to_string(*reached) + "/" + std::to_string(*total_) + " iterations" + who;
  const int cells = std::max(10, std::min(40, width - static_cast<int>(count.size()) - 3));
  const auto done = static_cast<int>(std::min<std::int64_t>(cells, *reached * cells / *total_));
  return "[" + std::string(static_cast<std::size_t>(done), '#') +
         std::string(static_cast<std::size_t>(cells - done), '-') + "]" + count;
}

std::string RunProgress::line_if_changed() {
  const std::optional<std::int64_t> reached = slowest_iteration();
  if (!reached || reached == last_reported_) return {};
  last_reported_ = reached;
  std::string text = "lens run: iteration " + std::to_string(*reached);
  if (total_ && *total_ > 0) text += "/" + std::to_string(*total_);
  return text + waited_for_text();
}

}  // namespace lens::cli
