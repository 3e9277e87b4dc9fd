// Hang records of a run (see hangs.hpp).
#include "report/hangs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
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
        hang.report =
            static_cast<int>(int_of(attribute_value(fields, "lens.hang.report")).value_or(1));
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
        if (const json* startup = attribute_value(fields, "lens.hang.startup");
            startup != nullptr && startup->is_object()) {
          const auto b = startup->find("boolValue");
          hang.startup = b != startup->end() && b->is_boolean() && b->get<bool>();
        }
        hang.iteration = int_of(attribute_value(fields, "lens.hang.iteration")).value_or(0);
        const auto column = [&](const char* key) {
          return array_of(attribute_value(fields, std::string("lens.hang.collective.") + key));
        };
        const std::vector<const json*> group_names = column("group");
        const std::vector<const json*> group_ranks = column("group_ranks");
        const std::vector<const json*> operations = column("op");
        const std::vector<const json*> seqs = column("seq");
        const std::vector<const json*> bytes = column("bytes");
        const std::vector<const json*> finished = column("finished_seq");
        const std::vector<const json*> finished_ops = column("finished_op");
        const std::vector<const json*> open = column("open_s");
        const auto at = [](const std::vector<const json*>& values, std::size_t i) {
          return i < values.size() ? values[i] : nullptr;
        };
        for (std::size_t i = 0; i < group_names.size(); ++i) {
          GroupState group;
          group.name = string_of(group_names[i]);
          group.ranks = string_of(at(group_ranks, i));
          group.operation = string_of(at(operations, i));
          group.seq = int_of(at(seqs, i)).value_or(0);
          group.bytes = int_of(at(bytes, i)).value_or(0);
          group.finished_seq = int_of(at(finished, i)).value_or(0);
          group.finished_operation = string_of(at(finished_ops, i));
          group.open_s = double_of(at(open, i));
          hang.groups.push_back(std::move(group));
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

namespace {

// "0-2,4" back into its ranks; nullopt when it is not such a list.
std::optional<std::vector<int>> parse_ranks(const std::string& text) {
  std::vector<int> ranks;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    try {
      const int first = std::stoi(item.substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(item.substr(dash + 1));
      if (last < first || last - first > (1 << 20)) return std::nullopt;
      for (int r = first; r <= last; ++r) ranks.push_back(r);
    } catch (...) {
      return std::nullopt;
    }
    start = comma + 1;
  }
  return ranks;
}

std::string ranks_text(std::vector<int> ranks) {
  std::vector<std::int64_t> wide(ranks.begin(), ranks.end());
  std::sort(wide.begin(), wide.end());
  std::string text;
  for (std::size_t i = 0; i < wide.size();) {
    std::size_t j = i;
    while (j + 1 < wide.size() && wide[j + 1] == wide[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(wide[i]);
    if (j > i) text += (j == i + 1 ? "," : "-") + std::to_string(wide[j]);
    i = j + 1;
  }
  return (wide.size() == 1 ? "rank " : "ranks ") + text;
}

std::string whole_seconds(double seconds) { return seconds_text(seconds, "%.0f s"); }

// Point-to-point operations: the two sides of a pipeline count their own sends and receives, so
// their sequence numbers are not matched across ranks.
bool point_to_point(const std::string& operation) {
  return operation == "send" || operation == "recv";
}

struct Member {
  int rank;
  const RankHang* hang;
  const GroupState* state;
};

// Where the rank is: its innermost open span and for how long ("" when none).
std::string where(const RankHang& hang) {
  if (hang.stack.empty()) return "with no open span";
  return "in " + hang.stack.back().name + " for " + whole_seconds(hang.stack.back().open_s);
}

// Ranks grouped by what `key` says of them, smallest group first (the odd one out), then by
// the lowest rank: "rank 1 X; ranks 0,2 Y".
template <class Key>
std::string grouped(const std::vector<Member>& members, Key key) {
  std::map<std::string, std::vector<int>> by;
  for (const Member& member : members) by[key(member)].push_back(member.rank);
  std::vector<std::pair<std::string, std::vector<int>>> groups(by.begin(), by.end());
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    if (a.second.size() != b.second.size()) return a.second.size() < b.second.size();
    return a.second.front() < b.second.front();
  });
  std::string text;
  for (const auto& [what, ranks] : groups) {
    text += (text.empty() ? "" : "; ") + ranks_text(ranks) + " " + what;
  }
  return text;
}

struct Verdict {
  std::string line;
  bool missing = false;  // some rank never entered
  bool point_to_point = false;
  double waiting_s = 0.0;
};

// Two ranks that name different operations for one sequence number of a group ran different
// collectives there (point-to-point operations are numbered per rank and not compared).
bool mismatched(const std::vector<Member>& reported) {
  std::map<std::int64_t, std::string> operation_of;
  const auto same = [&](std::int64_t seq, const std::string& operation) {
    if (seq <= 0 || operation.empty() || point_to_point(operation)) return true;
    const auto [it, inserted] = operation_of.emplace(seq, operation);
    return inserted || it->second == operation;
  };
  bool consistent = true;
  for (const Member& m : reported) {
    consistent = same(m.state->seq, m.state->operation) && consistent;
    consistent = same(m.state->finished_seq, m.state->finished_operation) && consistent;
  }
  return !consistent;
}

std::string last_finished(const GroupState& state) {
  if (state.finished_seq <= 0) return "no collective of it finished";
  return "last finished " + state.finished_operation + " #" + std::to_string(state.finished_seq);
}

std::optional<Verdict> group_verdict(const std::string& name, const std::vector<int>& ranks,
                                     const std::vector<Member>& reported, bool startup,
                                     bool unique_name) {
  // The oldest collective a rank is inside: the one the group is stuck in.
  std::optional<std::int64_t> oldest;
  for (const Member& m : reported) {
    if (m.state->inside() && (!oldest || m.state->seq < *oldest)) oldest = m.state->seq;
  }
  if (!oldest) return std::nullopt;
  const std::int64_t seq = *oldest;
  const std::string label = unique_name ? name : name + " (" + ranks_text(ranks) + ")";
  const std::string head = std::string(startup ? "hang during start-up in " : "hang in ") + label;
  Verdict verdict;
  if (mismatched(reported)) {
    verdict.missing = true;
    for (const Member& m : reported)
      verdict.waiting_s = std::max(verdict.waiting_s, m.state->open_s);
    verdict.line = head + ": mismatched collectives: " + grouped(reported, [](const Member& m) {
                     if (m.state->inside()) {
                       return "in " + m.state->operation + " #" + std::to_string(m.state->seq);
                     }
                     return last_finished(*m.state);
                   });
    return verdict;
  }
  const auto oldest_member = std::find_if(reported.begin(), reported.end(), [&](const Member& m) {
    return m.state->inside() && m.state->seq == seq;
  });
  if (point_to_point(oldest_member->state->operation)) {
    // Sends and receives are numbered per rank: no sequence numbers matched, only who waits in
    // one and where the others are.
    verdict.point_to_point = true;
    std::vector<Member> in_p2p;
    std::vector<Member> elsewhere;
    std::int64_t iteration = 0;
    for (const Member& m : reported) {
      if (m.state->inside() && point_to_point(m.state->operation)) {
        in_p2p.push_back(m);
        iteration = std::max(iteration, m.hang->iteration);
        verdict.waiting_s = std::max(verdict.waiting_s, m.state->open_s);
      } else {
        elsewhere.push_back(m);
      }
    }
    std::string line = head + " point-to-point";
    if (iteration > 0 && !startup) line += " (iteration " + std::to_string(iteration) + ")";
    line += ": " + grouped(in_p2p, [](const Member& m) {
              char open[32];
              std::snprintf(open, sizeof(open), "%.0f s", m.state->open_s);
              return "waiting in " + m.state->operation + " for " + open;
            });
    if (!elsewhere.empty()) {
      verdict.missing = true;
      line += "; " + grouped(elsewhere, [](const Member& m) { return "now " + where(*m.hang); });
    }
    verdict.line = std::move(line);
    return verdict;
  }
  std::vector<Member> waiting;  // inside it
  std::vector<Member> behind;   // never entered it
  std::vector<Member> past;     // finished it
  std::int64_t iteration = 0;
  std::string operation;
  for (const Member& m : reported) {
    if (m.state->seq == seq && m.state->inside()) {
      waiting.push_back(m);
      operation = m.state->operation;
      iteration = std::max(iteration, m.hang->iteration);
      verdict.waiting_s = std::max(verdict.waiting_s, m.state->open_s);
    } else if (m.state->seq < seq) {
      behind.push_back(m);
    } else {
      past.push_back(m);
    }
  }
  std::vector<int> silent;
  for (const int rank : ranks) {
    if (std::none_of(reported.begin(), reported.end(),
                     [&](const Member& m) { return m.rank == rank; })) {
      silent.push_back(rank);
    }
  }
  std::string line = head + " " + operation + " #" + std::to_string(seq);
  if (iteration > 0 && !startup) line += " (iteration " + std::to_string(iteration) + ")";
  if (behind.empty() && past.empty() && silent.empty()) {
    // Every rank is inside: which one is stuck shows in where each is.
    verdict.line = line + ": every rank of " + label +
                   " entered it and none finished (stuck inside the collective): " +
                   grouped(waiting, [](const Member& m) { return where(*m.hang); });
    return verdict;
  }
  std::vector<int> waiting_ranks;
  for (const Member& m : waiting) waiting_ranks.push_back(m.rank);
  line += ": " + ranks_text(waiting_ranks) + " waiting " + whole_seconds(verdict.waiting_s);
  if (!behind.empty()) {
    verdict.missing = true;
    line += "; " + grouped(behind, [](const Member& m) {
              return "never entered it — " + last_finished(*m.state) + ", now " + where(*m.hang);
            });
  }
  if (!past.empty()) {
    line +=
        "; " + grouped(past, [](const Member& m) {
          if (!m.state->inside()) return std::string("finished it");
          return "finished it, now in " + m.state->operation + " #" + std::to_string(m.state->seq);
        });
  }
  if (!silent.empty()) {
    verdict.missing = true;
    line += "; " + ranks_text(silent) + " sent no hang report";
  }
  verdict.line = std::move(line);
  return verdict;
}

}  // namespace

std::vector<std::string> hang_verdicts(const std::map<int, RankHang>& ranks) {
  // The hanging ranks' states, per group (name and ranks).
  std::map<std::pair<std::string, std::string>, std::vector<Member>> groups;
  std::map<std::string, std::set<std::string>> rank_sets;  // per name
  bool startup = false;
  bool any = false;
  for (const auto& [rank, hang] : ranks) {
    if (hang.resumed) continue;
    any = true;
    startup = startup || hang.startup;
    for (const GroupState& group : hang.groups) {
      groups[{group.name, group.ranks}].push_back({rank, &hang, &group});
      rank_sets[group.name].insert(group.ranks);
    }
  }
  std::vector<Verdict> verdicts;
  for (const auto& [key, members] : groups) {
    std::optional<std::vector<int>> group_ranks = parse_ranks(key.second);
    if (!group_ranks) continue;
    if (std::optional<Verdict> verdict = group_verdict(key.first, *group_ranks, members, startup,
                                                       rank_sets[key.first].size() == 1)) {
      verdicts.push_back(std::move(*verdict));
    }
  }
  std::stable_sort(verdicts.begin(), verdicts.end(), [](const Verdict& a, const Verdict& b) {
    if (a.missing != b.missing) return a.missing;
    if (a.point_to_point != b.point_to_point) return b.point_to_point;
    return a.waiting_s > b.waiting_s;
  });
  std::vector<std::string> lines;
  for (Verdict& verdict : verdicts) lines.push_back(std::move(verdict.line));
  if (lines.empty() && any && startup) {
    std::vector<Member> hanging;
    double stalled = 0.0;
    for (const auto& [rank, hang] : ranks) {
      if (hang.resumed) continue;
      hanging.push_back({rank, &hang, nullptr});
      stalled = std::max(stalled, hang.stalled_s);
    }
    lines.push_back("hang during start-up (no step for " + whole_seconds(stalled) +
                    "): " + grouped(hanging, [](const Member& m) { return where(*m.hang); }));
  }
  return lines;
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

namespace {

json collectives_json(const std::vector<GroupState>& groups) {
  json out = json::array();
  for (const GroupState& group : groups) {
    out.push_back({{"group", group.name},
                   {"group_ranks", group.ranks},
                   {"op", group.operation},
                   {"seq", group.seq},
                   {"bytes", group.bytes},
                   {"finished_seq", group.finished_seq},
                   {"finished_op", group.finished_operation},
                   {"inside", group.inside()},
                   {"open_s", rounded(group.open_s)}});
  }
  return out;
}

}  // namespace

json hangs_json(const std::map<int, RankHang>& ranks) {
  json out = json::array();
  for (const auto& [rank, hang] : ranks) {
    json stack = json::array();
    for (const OpenSpanAge& span : hang.stack) {
      stack.push_back({{"name", span.name}, {"open_s", rounded(span.open_s)}});
    }
    out.push_back(
        {{"rank", rank},
         {"report", hang.report},
         {"stalled_s", rounded(hang.stalled_s)},
         {"timeout_s", rounded(hang.timeout_s)},
         {"steps", hang.steps},
         {"span", hang.stack.empty() ? json(nullptr) : json(hang.stack.back().name)},
         {"span_open_s",
          hang.stack.empty() ? json(nullptr) : json(rounded(hang.stack.back().open_s))},
         {"stack", std::move(stack)},
         {"other_threads", hang.others},
         {"startup", hang.startup},
         {"iteration", hang.iteration > 0 ? json(hang.iteration) : json(nullptr)},
         {"collectives", collectives_json(hang.groups)},
         {"resumed", hang.resumed},
         {"resumed_after_s", hang.resumed ? json(rounded(hang.resumed_after_s)) : json(nullptr)}});
  }
  return out;
}

std::string hangs_html(const std::map<int, RankHang>& ranks) {
  if (ranks.empty()) return {};
  std::string html = "<h2 id=\"hangs\">Hangs</h2>\n";
  for (const std::string& verdict : hang_verdicts(ranks)) {
    html += "<p class=\"hang-verdict\"><strong>" + html_escape(verdict) + "</strong></p>\n";
  }
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
            (hang.report > 1 ? " (report " + std::to_string(hang.report) + ")" : "") + "</td><td>" +
            std::to_string(hang.steps) + "</td><td>" +
            html_escape(hang.stack.empty() ? "no open span" : stack_text(hang.stack)) +
            "</td><td>" + html_escape(others) + "</td><td>" +
            (hang.resumed ? "after " + seconds_text(hang.resumed_after_s) : "no") + "</td></tr>\n";
  }
  return html + "</table>\n";
}

}  // namespace lens::report
