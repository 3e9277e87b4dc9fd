// summary.json (see summary_json.hpp).
#include "report/summary_json.hpp"

#include <cmath>

namespace lens::report {
namespace {

// Milliseconds rounded to microseconds: stable text, no float noise.
double rounded(double ms) { return std::round(ms * 1000.0) / 1000.0; }

}  // namespace

nlohmann::json summary_json(const RunAnalysis& analysis) {
  const StallResult& stalls = analysis.stalls;
  nlohmann::json suspects = nlohmann::json::array();
  for (const StallSuspect& suspect : stalls.suspects) {
    const bool rank = suspect.kind == SuspectKind::rank;
    suspects.push_back(
        {{"kind", std::string(suspect_kind_name(suspect.kind))},
         {"rank", rank ? nlohmann::json(suspect.rank) : nlohmann::json(nullptr)},
         {"ranks", suspect.ranks},
         {"group", rank ? nlohmann::json(nullptr) : nlohmann::json(suspect.group)},
         {"phase", std::string(phase_name(suspect.phase))},
         {"excess_ms_per_step", rounded(suspect.excess_ms_per_step)},
         {"ci_ms", {rounded(suspect.ci_low_ms), rounded(suspect.ci_high_ms)}},
         {"z", std::round(suspect.z * 100.0) / 100.0},
         {"first_iteration", suspect.first_iteration},
         {"last_iteration", suspect.last_iteration},
         {"steps", suspect.steps},
         {"exposed_ms", rounded(suspect.exposed_ms)},
         {"share", std::round(suspect.share * 1e6) / 1e6},
         {"others_wait", suspect.others_wait},
         {"others_wait_in", suspect.others_wait
                                ? nlohmann::json(std::string(phase_name(suspect.wait_phase)))
                                : nlohmann::json(nullptr)},
         {"sentence", suspect_sentence(suspect, stalls)}});
  }
  nlohmann::json out = {{"run_id", analysis.info.run_id},
                        {"ranks", stalls.ranks},
                        {"iterations_compared", stalls.iterations.size()},
                        {"median_step_ms", rounded(stalls.median_step_ms)},
                        {"run_ms", rounded(stalls.run_ms)},
                        {"exposed_ms", rounded(stalls.exposed_ms)},
                        {"suspect_test",
                         {{"false_alarm_rate", stalls.false_alarm_rate},
                          {"min_excess_ms", rounded(stalls.min_excess_ms)},
                          {"windows_tested", stalls.tests},
                          {"z_critical", std::round(stalls.z_critical * 100.0) / 100.0}}},
                        {"suspects", std::move(suspects)}};
  nlohmann::json stages = nlohmann::json::array();
  for (const StageTime& stage : stalls.stages) {
    stages.push_back({{"stage", stage.stage},
                      {"stages", stage.stages},
                      {"ranks", stage.ranks},
                      {"step_ms", rounded(stage.step_ms)},
                      {"compute_ms", rounded(stage.compute_ms)},
                      {"bubble_ms", rounded(stage.bubble_ms)}});
  }
  out["stages"] = std::move(stages);
  nlohmann::json completeness = nlohmann::json::array();
  for (const RankCompleteness& rank : analysis.completeness.ranks) {
    nlohmann::json signals = nlohmann::json::object();
    for (const SignalCompleteness& signal : rank.signals) {
      nlohmann::json entry = {{"received", signal.received}};
      if (signal.reported) {
        entry["exported"] = signal.exported;
        entry["dropped"] = signal.dropped;
        entry["failed"] = signal.failed;
        entry["missing"] = signal.missing;
      }
      signals[signal.signal] = std::move(entry);
    }
    completeness.push_back(
        {{"rank", rank.rank},
         {"complete", rank.complete() ? nlohmann::json(*rank.complete()) : nlohmann::json(nullptr)},
         {"signals", std::move(signals)}});
  }
  out["completeness"] = std::move(completeness);
  out["silent_ranks"] = analysis.completeness.silent_ranks;
  if (!stalls.iterations.empty()) {
    out["first_iteration"] = stalls.iterations.front();
    out["last_iteration"] = stalls.iterations.back();
  }
  return out;
}

}  // namespace lens::report
