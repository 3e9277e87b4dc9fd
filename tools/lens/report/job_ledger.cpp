// The job ledger's accounting (see job_ledger.hpp): per rank, labelled pieces of time are laid
// over the job's wall time and every instant goes to the piece of the highest priority there.
// Pure functions; thread-safe.
#include "report/job_ledger.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace lens::report {
namespace {

// Highest first: the cause an instant gets where several pieces cover it.
constexpr std::array<Cause, kCauseCount> kPriority = {
    Cause::checkpoint_load, Cause::checkpoint_save, Cause::evaluation, Cause::lost,
    Cause::straggler_wait,  Cause::productive,      Cause::startup,    Cause::hang,
    Cause::failure,         Cause::shutdown,        Cause::restart};

struct Piece {
  std::int64_t start = 0;
  std::int64_t end = 0;
  Cause cause = Cause::restart;
};

struct StepSpan {
  std::int64_t start = 0;
  std::int64_t end = 0;
  std::optional<std::int64_t> iteration;
};

// A rank's finished steps in one run, by start; one per iteration (the latest when one repeats).
std::vector<StepSpan> steps_of(const RankData& rank) {
  std::vector<StepSpan> steps;
  for (const SpanRecord& span : rank.spans) {
    // A step ended with an error status or by the shutdown of a rank stopped mid-step
    // (nemo.span.truncated) did not finish: its time belongs to how the run ended.
    if (span.name.view() != kLedgerStepSpan || span.error) continue;
    const nlohmann::json* truncated = find_attribute(span.attributes, "nemo.span.truncated");
    if (truncated != nullptr && truncated->is_boolean() && truncated->get<bool>()) continue;
    steps.push_back(
        {span.start_ns, span.end_ns, int_attribute(span.attributes, "megatron.iteration")});
  }
  std::sort(steps.begin(), steps.end(),
            [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
  std::map<std::int64_t, std::size_t> latest;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].iteration) latest[*steps[i].iteration] = i;
  }
  std::vector<StepSpan> kept;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!steps[i].iteration || latest[*steps[i].iteration] == i) kept.push_back(steps[i]);
  }
  return kept;
}

bool is_wait_span(std::string_view name) {
  return std::find(kLedgerWaitSpans.begin(), kLedgerWaitSpans.end(), name) !=
         kLedgerWaitSpans.end();
}

// A rank's time in the wait spans of each of its finished steps, per span name.
struct StepWaits {
  std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> spans;  // by name
  std::map<std::string, std::int64_t> total;
};
using IterationLeast = std::map<std::int64_t, std::map<std::string, std::int64_t>>;

struct RunFacts {
  std::int64_t start = std::numeric_limits<std::int64_t>::max();
  std::int64_t end = std::numeric_limits<std::int64_t>::min();
  std::map<int, std::vector<StepSpan>> steps;  // per rank
  std::set<std::int64_t> iterations;           // with a step on some rank
  IterationLeast least;  // per iteration and wait span name, the least time a rank spent there
  RunEnd end_cause = RunEnd::completed;
};

RunEnd run_end(const LedgerRunInput& run, bool last) {
  if (!run.hung_ranks.empty()) return RunEnd::hung;
  bool any_train = false;
  bool all_clean = true;
  for (const auto& [rank, data] : run.data.ranks) {
    bool clean = false;
    for (const SpanRecord& span : data.spans) {
      if (span.name.view() != kLedgerTrainSpan) continue;
      any_train = true;
      clean = !span.error;
    }
    all_clean = all_clean && clean;
  }
  // Without the job spans (group `job` off) only the last run can have completed: a job starts
  // another run only after one did not.
  if (!any_train) return last ? RunEnd::completed : RunEnd::failed;
  return all_clean ? RunEnd::completed : RunEnd::failed;
}

Cause tail_cause(RunEnd end) {
  switch (end) {
    case RunEnd::hung:
      return Cause::hang;
    case RunEnd::failed:
      return Cause::failure;
    case RunEnd::completed:
      break;
  }
  return Cause::shutdown;
}

std::map<std::int64_t, StepWaits> rank_waits(const RankData& data,
                                             const std::vector<StepSpan>& steps) {
  std::map<std::int64_t, StepWaits> waits;  // by iteration
  std::vector<const SpanRecord*> wait_spans;
  for (const SpanRecord& span : data.spans) {
    if (is_wait_span(span.name.view())) wait_spans.push_back(&span);
  }
  if (wait_spans.empty()) return waits;
  std::sort(wait_spans.begin(), wait_spans.end(),
            [](const SpanRecord* a, const SpanRecord* b) { return a->start_ns < b->start_ns; });
  std::size_t next = 0;
  for (const StepSpan& step : steps) {
    while (next < wait_spans.size() && wait_spans[next]->start_ns < step.start) ++next;
    for (std::size_t i = next; i < wait_spans.size() && wait_spans[i]->start_ns < step.end; ++i) {
      const SpanRecord& span = *wait_spans[i];
      if (!step.iteration || span.end_ns > step.end) continue;
      StepWaits& at = waits[*step.iteration];
      const std::string name(span.name.view());
      at.spans[name].emplace_back(span.start_ns, span.end_ns);
      at.total[name] += span.end_ns - span.start_ns;
    }
  }
  return waits;
}

// The wait excess of a rank's collectives in each step of one run: the time in wait spans of one
// name beyond the least any rank of the run spent in that name in that iteration, laid at the
// start of those spans (a rank waits first, then transfers).
void add_wait_pieces(const RankData& data, const std::vector<StepSpan>& steps,
                     const IterationLeast& least, std::vector<Piece>& pieces) {
  for (const auto& [iteration, at] : rank_waits(data, steps)) {
    for (const auto& [name, spans] : at.spans) {
      std::int64_t excess = at.total.at(name) - least.at(iteration).at(name);
      for (const auto& [start, end] : spans) {
        if (excess <= 0) break;
        const std::int64_t taken = std::min(excess, end - start);
        pieces.push_back({start, start + taken, Cause::straggler_wait});
        excess -= taken;
      }
    }
  }
}

// Every instant of [from, to) given to the highest-priority piece covering it; each stretch
// credited to the run that owns it (the last run starting at or before it).
void sweep(const std::vector<Piece>& pieces, std::int64_t from, std::int64_t to,
           const std::vector<std::int64_t>& run_starts, CauseTimes& rank_total,
           std::vector<CauseTimes>& per_run) {
  std::array<std::size_t, kCauseCount> rank_of_cause{};  // Cause index -> priority rank
  for (std::size_t p = 0; p < kCauseCount; ++p) rank_of_cause[index_of(kPriority[p])] = p;
  struct Event {
    std::int64_t at;
    int delta;
    std::size_t priority;
  };
  std::vector<Event> events;
  events.reserve(pieces.size() * 2);
  for (const Piece& piece : pieces) {
    const std::int64_t start = std::max(piece.start, from);
    const std::int64_t end = std::min(piece.end, to);
    if (end <= start) continue;
    events.push_back({start, +1, rank_of_cause[index_of(piece.cause)]});
    events.push_back({end, -1, rank_of_cause[index_of(piece.cause)]});
  }
  for (std::int64_t start : run_starts) events.push_back({start, 0, 0});
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.at < b.at; });
  std::array<int, kCauseCount> active{};
  std::int64_t position = from;
  std::size_t run = 0;
  for (std::size_t i = 0; i <= events.size(); ++i) {
    const std::int64_t at = i < events.size() ? events[i].at : to;
    if (at > position) {
      std::size_t p = 0;
      while (p < kCauseCount && active[p] == 0) ++p;
      const Cause cause = p < kCauseCount ? kPriority[p] : Cause::restart;
      rank_total[index_of(cause)] += at - position;
      per_run[run][index_of(cause)] += at - position;
      position = at;
    }
    if (i == events.size()) break;
    active[events[i].priority] += events[i].delta;
    while (run + 1 < run_starts.size() && run_starts[run + 1] <= position) ++run;
  }
}

std::string seconds_text(std::int64_t nanos) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", static_cast<double>(nanos) / 1e9);
  return text;
}

}  // namespace

std::string_view cause_name(Cause cause) {
  static constexpr std::array<std::string_view, kCauseCount> kNames = {
      "startup", "productive", "checkpoint_load", "checkpoint_save", "evaluation", "straggler_wait",
      "lost",    "hang",       "failure",         "restart",         "shutdown"};
  return kNames[index_of(cause)];
}

std::string_view run_end_name(RunEnd end) {
  switch (end) {
    case RunEnd::failed:
      return "failed";
    case RunEnd::hung:
      return "hung";
    case RunEnd::completed:
      break;
  }
  return "completed";
}

JobLedger account_job(const std::vector<LedgerRunInput>& runs_in) {
  JobLedger ledger;
  // The runs with spans, by start.
  std::vector<std::pair<const LedgerRunInput*, RunFacts>> runs;
  for (const LedgerRunInput& run : runs_in) {
    RunFacts facts;
    for (const auto& [rank, data] : run.data.ranks) {
      for (const SpanRecord& span : data.spans) {
        facts.start = std::min(facts.start, span.start_ns);
        facts.end = std::max(facts.end, span.end_ns);
      }
    }
    if (facts.start > facts.end) continue;
    for (const auto& [rank, data] : run.data.ranks) {
      facts.steps[rank] = steps_of(data);
      for (const StepSpan& step : facts.steps[rank]) {
        if (step.iteration) facts.iterations.insert(*step.iteration);
      }
      for (const auto& [iteration, at] : rank_waits(data, facts.steps[rank])) {
        for (const auto& [name, total] : at.total) {
          auto [it, inserted] = facts.least[iteration].emplace(name, total);
          if (!inserted) it->second = std::min(it->second, total);
        }
      }
    }
    runs.emplace_back(&run, std::move(facts));
  }
  std::stable_sort(runs.begin(), runs.end(),
                   [](const auto& a, const auto& b) { return a.second.start < b.second.start; });
  if (runs.empty()) return ledger;

  ledger.start_ns = runs.front().second.start;
  ledger.end_ns = ledger.start_ns;
  std::set<int> ranks;
  std::vector<std::int64_t> run_starts;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    auto& [run, facts] = runs[k];
    facts.end_cause = run_end(*run, k + 1 == runs.size());
    ledger.end_ns = std::max(ledger.end_ns, facts.end);
    for (const auto& [rank, data] : run->data.ranks) ranks.insert(rank);
    run_starts.push_back(facts.start);
    if (!run->job_uuid.empty()) ledger.job_uuids.insert(run->job_uuid);
  }

  // Iterations a later run did again.
  std::vector<std::set<std::int64_t>> later(runs.size());
  for (std::size_t k = runs.size(); k-- > 1;) {
    later[k - 1] = later[k];
    later[k - 1].insert(runs[k].second.iterations.begin(), runs[k].second.iterations.end());
  }

  // One rank at a time: its pieces over every run, then the sweep.
  std::vector<CauseTimes> run_times(runs.size(), CauseTimes{});
  for (int rank : ranks) {
    std::vector<Piece> out;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const auto& [run, facts] = runs[k];
      const Cause tail = tail_cause(facts.end_cause);
      auto data = run->data.ranks.find(rank);
      const std::vector<StepSpan>* steps =
          data == run->data.ranks.end() ? nullptr : &facts.steps.at(rank);
      if (steps == nullptr || steps->empty()) {
        out.push_back(
            {facts.start, facts.end, facts.end_cause == RunEnd::completed ? Cause::startup : tail});
      } else {
        out.push_back({facts.start, steps->front().start, Cause::startup});
        std::int64_t slot_start = steps->front().start;
        for (const StepSpan& step : *steps) {
          const bool lost = step.iteration && later[k].count(*step.iteration) != 0;
          out.push_back({slot_start, step.end, lost ? Cause::lost : Cause::productive});
          slot_start = std::max(slot_start, step.end);
        }
        out.push_back({slot_start, facts.end, tail});
      }
      if (data == run->data.ranks.end()) continue;
      for (const SpanRecord& span : data->second.spans) {
        const std::string_view name = span.name.view();
        if (name == kLedgerLoadSpan) {
          out.push_back({span.start_ns, span.end_ns, Cause::checkpoint_load});
        } else if (name == kLedgerSaveSpan) {
          out.push_back({span.start_ns, span.end_ns, Cause::checkpoint_save});
        } else if (name == kLedgerEvaluateSpan) {
          out.push_back({span.start_ns, span.end_ns, Cause::evaluation});
        }
      }
      add_wait_pieces(data->second, *steps, facts.least, out);
    }
    RankLedger rank_ledger;
    rank_ledger.rank = rank;
    std::vector<CauseTimes> per_run(runs.size(), CauseTimes{});
    sweep(out, ledger.start_ns, ledger.end_ns, run_starts, rank_ledger.time, per_run);
    for (std::size_t k = 0; k < runs.size(); ++k) {
      for (std::size_t c = 0; c < kCauseCount; ++c) run_times[k][c] += per_run[k][c];
    }
    for (std::size_t c = 0; c < kCauseCount; ++c) ledger.total[c] += rank_ledger.time[c];
    ledger.ranks.push_back(rank_ledger);
  }
  const auto rank_count = static_cast<std::int64_t>(ranks.size());
  for (std::int64_t& value : ledger.total) value /= rank_count;

  for (std::size_t k = 0; k < runs.size(); ++k) {
    const auto& [run, facts] = runs[k];
    RunLedger out;
    out.source = run->source;
    out.run_id = run->run_id;
    out.run_uuid = run->run_uuid;
    out.job_uuid = run->job_uuid;
    out.start_ns = facts.start;
    out.end_ns = facts.end;
    out.owned_end_ns = k + 1 < runs.size() ? runs[k + 1].second.start : ledger.end_ns;
    out.end = facts.end_cause;
    out.ranks = run->data.ranks.size();
    out.iterations = facts.iterations.size();
    if (!facts.iterations.empty()) {
      out.first_iteration = *facts.iterations.begin();
      out.last_iteration = *facts.iterations.rbegin();
    }
    for (std::int64_t iteration : facts.iterations) {
      if (later[k].count(iteration) == 0) continue;
      ++out.redone;
      if (!out.redone_first) out.redone_first = iteration;
      out.redone_last = iteration;
    }
    out.time = run_times[k];
    for (std::int64_t& value : out.time) value /= rank_count;
    ledger.redone += out.redone;
    ledger.runs.push_back(std::move(out));
  }
  return ledger;
}

nlohmann::json ledger_json(const JobLedger& ledger) {
  auto seconds = [](const CauseTimes& times) {
    nlohmann::json out = nlohmann::json::object();
    for (std::size_t c = 0; c < kCauseCount; ++c) {
      out[std::string(cause_name(static_cast<Cause>(c)))] = static_cast<double>(times[c]) / 1e9;
    }
    return out;
  };
  auto optional_int = [](const std::optional<std::int64_t>& value) {
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  nlohmann::json out;
  out["start_unix_ns"] = ledger.start_ns;
  out["end_unix_ns"] = ledger.end_ns;
  out["wall_s"] = static_cast<double>(ledger.wall_ns()) / 1e9;
  out["job_uuids"] = ledger.job_uuids;
  nlohmann::json causes = nlohmann::json::array();
  for (std::size_t c = 0; c < kCauseCount; ++c) {
    causes.push_back(std::string(cause_name(static_cast<Cause>(c))));
  }
  out["causes"] = causes;
  out["total_s"] = seconds(ledger.total);
  out["productive_fraction"] =
      ledger.wall_ns() > 0 ? static_cast<double>(ledger.total[index_of(Cause::productive)]) /
                                 static_cast<double>(ledger.wall_ns())
                           : 0.0;
  out["redone_iterations"] = ledger.redone;
  nlohmann::json runs = nlohmann::json::array();
  for (const RunLedger& run : ledger.runs) {
    runs.push_back({{"source", run.source},
                    {"run_id", run.run_id},
                    {"run_uuid", run.run_uuid},
                    {"job_uuid", run.job_uuid},
                    {"start_unix_ns", run.start_ns},
                    {"end_unix_ns", run.end_ns},
                    {"owned_s", static_cast<double>(run.owned_end_ns - run.start_ns) / 1e9},
                    {"end", std::string(run_end_name(run.end))},
                    {"ranks", run.ranks},
                    {"first_iteration", optional_int(run.first_iteration)},
                    {"last_iteration", optional_int(run.last_iteration)},
                    {"iterations", run.iterations},
                    {"redone_iterations", run.redone},
                    {"redone_first", optional_int(run.redone_first)},
                    {"redone_last", optional_int(run.redone_last)},
                    {"time_s", seconds(run.time)}});
  }
  out["runs"] = runs;
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankLedger& rank : ledger.ranks) {
    ranks.push_back({{"rank", rank.rank}, {"time_s", seconds(rank.time)}});
  }
  out["ranks"] = ranks;
  return out;
}

std::vector<std::string> ledger_summary_lines(const JobLedger& ledger) {
  std::vector<std::string> lines;
  std::size_t failed = 0;
  for (const RunLedger& run : ledger.runs) failed += run.end == RunEnd::completed ? 0 : 1;
  lines.push_back("job: " + std::to_string(ledger.runs.size()) + " runs (" +
                  std::to_string(failed) + " did not complete), wall time " +
                  seconds_text(ledger.wall_ns()) + ", " + std::to_string(ledger.redone) +
                  " iterations redone");
  std::string parts;
  for (std::size_t c = 0; c < kCauseCount; ++c) {
    const Cause cause = static_cast<Cause>(c);
    const std::int64_t value = ledger.total[c];
    if (ledger.wall_ns() <= 0 || value * 2000 < ledger.wall_ns()) continue;
    char percent[16];
    std::snprintf(percent, sizeof(percent), "%.1f%%",
                  100.0 * static_cast<double>(value) / static_cast<double>(ledger.wall_ns()));
    parts += (parts.empty() ? "" : ", ") + std::string(cause_name(cause)) + " " +
             seconds_text(value) + " (" + percent + ")";
  }
  if (!parts.empty()) lines.push_back("job time per rank: " + parts);
  return lines;
}

}  // namespace lens::report
