// Hang records of a run (see hangs.hpp).
#include "report/hangs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "report/html_writer.hpp"

namespace lens::report {
namespace {

using nlohmann::json;

const json* attribute_value(const json& attributes, std::string_view key) {
  if (!attributes.is_array()) return nullptr;
  for (const json& attribute : attributes) {
    if (!attribute.is_object()) continue;
    const auto k = attribute.find("key");
    if (k != attribute.end() && k->is_string() && k->get_ref<const std::string&>() == key) {
      const auto v = attribute.find("value");
      return v == attribute.end() ? nullptr : &*v;
    }
  }
  return nullptr;
}

// OTLP JSON integers are strings ("intValue": "3"); numbers are accepted too.
std::optional<std::int64_t> as_int(const json& value) {
  try {
    if (value.is_string()) return std::stoll(value.get<std::string>());
    if (value.is_number()) return value.get<std::int64_t>();
  } catch (...) {
  }
  return std::nullopt;
}

std::optional<std::int64_t> int_of(const json* value) {
  if (value == nullptr || !value->is_object()) return std::nullopt;
  const auto it = value->find("intValue");
  return it == value->end() ? std::nullopt : as_int(*it);
}

double double_of(const json* value) {
  if (value == nullptr || !value->is_object()) return 0.0;
  const auto it = value->find("doubleValue");
  if (it != value->end() && it->is_number()) return it->get<double>();
  const std::optional<std::int64_t> integer = int_of(value);
  return integer ? static_cast<double>(*integer) : 0.0;
}

std::string string_of(const json* value) {
  if (value == nullptr || !value->is_object()) return {};
  const auto it = value->find("stringValue");
  return it != value->end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<const json*> array_of(const json* value) {
  std::vector<const json*> out;
  if (value == nullptr || !value->is_object()) return out;
  const auto array = value->find("arrayValue");
  if (array == value->end() || !array->is_object()) return out;
  const auto values = array->find("values");
  if (values == array->end() || !values->is_array()) return out;
  for (const json& element : *values) out.push_back(&element);
  return out;
}

std::string seconds_text(double seconds, const char* format = "%.1f s") {
  char text[32];
  std::snprintf(text, sizeof(text), format, seconds);
  return text;
}

std::string stack_text(const std::vector<OpenSpanAge>& stack) {
  std::string text;
  for (const OpenSpanAge& span : stack) {
    if (!text.empty()) text += " > ";
    text += span.name + " (" + seconds_text(span.open_s) + ")";
  }
  return text;
}

double rounded(double seconds) { return std::round(seconds * 1000.0) / 1000.0; }

}  // namespace

void HangLog::consume_line(std::string_view line) {
  if (line.find("lens.hang") == std::string_view::npos) return;  // most lines: no parse
  const json request = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (!request.is_object()) return;
  const auto resource_logs = request.find("resourceLogs");
  if (resource_logs == request.end() || !resource_logs->is_array()) return;
  for (const json& resource : *resource_logs) {
    if (!resource.is_object()) continue;
    const json attributes =
        resource.value("resource", json::object()).value("attributes", json::array());
    if (run_id_ && string_of(attribute_value(attributes, "nemo.run.id")) != *run_id_) continue;
    std::optional<std::int64_t> rank = int_of(attribute_value(attributes, "dl.rank"));
    if (!rank) rank = int_of(attribute_value(attributes, "rank"));
    if (!rank) continue;
    for (const json& scope : resource.value("scopeLogs", json::array())) {
      if (!scope.is_object()) continue;
      for (const json& record : scope.value("logRecords", json::array())) {
        if (!record.is_object()) continue;
        const json fields = record.value("attributes", json::array());
        if (attribute_value(fields, "lens.hang.stalled_s") == nullptr) continue;
        const std::int64_t time_ns =
            record.contains("timeUnixNano") ? as_int(record["timeUnixNano"]).value_or(0) : 0;
        const int r = static_cast<int>(*rank);
        if (attribute_value(fields, "lens.hang.reports") != nullptr) {  // resumed
          auto it = ranks_.find(r);
          if (it == ranks_.end() || it->second.time_ns > time_ns) continue;
          it->second.resumed = true;
          it->second.resumed_after_s = double_of(attribute_value(fields, "lens.hang.stalled_s"));
          ++records_;
          continue;
        }
        RankHang hang;
        hang.rank = r;
        hang.time_ns = time_ns;
        hang.report = static_cast<int>(int_of(attribute_value(fields, "lens.hang.report")).value_or(1));
        hang.stalled_s = double_of(attribute_value(fields, "lens.hang.stalled_s"));
        hang.timeout_s = double_of(attribute_value(fields, "lens.hang.timeout_s"));
        hang.steps = int_of(attribute_value(fields, "lens.hang.steps")).value_or(0);
        const std::vector<const json*> names = array_of(attribute_value(fields, "lens.hang.stack"));
        const std::vector<const json*> ages =
            array_of(attribute_value(fields, "lens.hang.stack_open_s"));
        for (std::size_t i = 0; i < names.size(); ++i) {
          hang.stack.push_back({string_of(names[i]), i < ages.size() ? double_of(ages[i]) : 0.0});
        }
        for (const json* other : array_of(attribute_value(fields, "lens.hang.other_threads"))) {
          hang.others.push_back(string_of(other));
        }
        const auto it = ranks_.find(r);
        if (it != ranks_.end() && it->second.time_ns > time_ns) continue;  // an older report
        ranks_[r] = std::move(hang);
        ++records_;
      }
    }
  }
}

void HangLog::consume_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return;  // the reader says why it skipped it
  std::ifstream in(path, std::ios::binary);
  for (std::string line; std::getline(in, line);) consume_line(line);
}

std::string no_progress_line(const std::map<int, RankHang>& ranks) {
  std::map<std::string, std::vector<const RankHang*>> by_span;
  double stalled = 0.0;
  for (const auto& [rank, hang] : ranks) {
    if (hang.resumed) continue;
    by_span[hang.stack.empty() ? std::string() : hang.stack.back().name].push_back(&hang);
    stalled = std::max(stalled, hang.stalled_s);
  }
  if (by_span.empty()) return {};
  std::vector<std::pair<std::string, std::vector<const RankHang*>>> groups(by_span.begin(),
                                                                           by_span.end());
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    if (a.second.size() != b.second.size()) return a.second.size() < b.second.size();
    return a.second.front()->rank < b.second.front()->rank;
  });
  std::string line = "no progress for " + seconds_text(stalled, "%.0f s") + ":";
  bool first = true;
  for (const auto& [span, hangs] : groups) {
    line += first ? " " : "; ";
    first = false;
    line += hangs.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < hangs.size(); ++i) {
      line += (i == 0 ? "" : ",") + std::to_string(hangs[i]->rank);
    }
    if (span.empty()) {
      line += " with no open span";
    } else {
      line += " in " + span;
      if (hangs.size() == 1) line += " (" + seconds_text(hangs[0]->stack.back().open_s) + ")";
    }
  }
  return line;
}

json hangs_json(const std::map<int, RankHang>& ranks) {
  json out = json::array();
  for (const auto& [rank, hang] : ranks) {
    json stack = json::array();
    for (const OpenSpanAge& span : hang.stack) {
      stack.push_back({{"name", span.name}, {"open_s", rounded(span.open_s)}});
    }
    out.push_back({{"rank", rank},
                   {"report", hang.report},
                   {"stalled_s", rounded(hang.stalled_s)},
                   {"timeout_s", rounded(hang.timeout_s)},
                   {"steps", hang.steps},
                   {"span", hang.stack.empty() ? json(nullptr) : json(hang.stack.back().name)},
                   {"span_open_s", hang.stack.empty() ? json(nullptr)
                                                      : json(rounded(hang.stack.back().open_s))},
                   {"stack", std::move(stack)},
                   {"other_threads", hang.others},
                   {"resumed", hang.resumed},
                   {"resumed_after_s",
                    hang.resumed ? json(rounded(hang.resumed_after_s)) : json(nullptr)}});
  }
  return out;
}

std::string hangs_html(const std::map<int, RankHang>& ranks) {
  if (ranks.empty()) return {};
  std::string html = "<h2 id=\"hangs\">Hangs</h2>\n";
  const std::string line = no_progress_line(ranks);
  html += "<p class=\"hang-line\">" +
          html_escape(line.empty() ? "every rank that reported a hang made progress again" : line) +
          "</p>\n<table class=\"hangs\">\n<tr><th>rank</th><th>no step for</th><th>steps "
          "before</th><th>where (open spans, outermost first)</th><th>other threads</th>"
          "<th>resumed</th></tr>\n";
  for (const auto& [rank, hang] : ranks) {
    std::string others;
    for (const std::string& other : hang.others) others += (others.empty() ? "" : "; ") + other;
    html += "<tr><td>" + std::to_string(rank) + "</td><td>" + seconds_text(hang.stalled_s) +
            (hang.report > 1 ? " (report " + std::to_string(hang.report) + ")" : "") +
            "</td><td>" + std::to_string(hang.steps) + "</td><td>" +
            html_escape(hang.stack.empty() ? "no open span" : stack_text(hang.stack)) +
            "</td><td>" + html_escape(others) + "</td><td>" +
            (hang.resumed ? "after " + seconds_text(hang.resumed_after_s) : "no") +
            "</td></tr>\n";
  }
  return html + "</table>\n";
}

}  // namespace lens::report
