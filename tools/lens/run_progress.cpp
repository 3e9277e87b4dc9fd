// Following traces.jsonl for the run's progress (see run_progress.hpp).
#include "run_progress.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

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

}  // namespace

void RunProgress::update() {
  std::ifstream in(traces_, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset_ += chunk.size();
  partial_ += chunk;
  for (std::size_t newline; (newline = partial_.find('\n')) != std::string::npos;) {
    consume(partial_.substr(0, newline));
    partial_.erase(0, newline + 1);
  }
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
    for (const json& scope : resource_spans.value("scopeSpans", json::array())) {
      for (const json& span : scope.value("spans", json::array())) {
        if (span.value("name", "") != "megatron.train_step") continue;
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

std::optional<int> RunProgress::slowest_rank() const {
  if (static_cast<int>(iterations_.size()) < world_size_) return std::nullopt;
  auto slowest = iterations_.begin();
  for (auto it = iterations_.begin(); it != iterations_.end(); ++it) {
    if (it->second < slowest->second) slowest = it;
  }
  return slowest->first;
}

std::string RunProgress::bar(int width) const {
  const std::optional<std::int64_t> reached = slowest_iteration();
  if (!reached) return "waiting for the first step of every rank";
  const std::string who = " (slowest: rank " + std::to_string(*slowest_rank()) + ")";
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
  return text + " (slowest: rank " + std::to_string(*slowest_rank()) + ")";
}

}  // namespace lens::cli
