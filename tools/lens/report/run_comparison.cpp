// The per-run series of a comparison (see run_comparison.hpp).
#include "report/run_comparison.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "report/statistics.hpp"
#include "report/steps.hpp"

namespace lens::report {

namespace {

std::vector<std::pair<std::int64_t, double>> medians(
    const std::map<std::int64_t, std::vector<double>>& by_iteration) {
  std::vector<std::pair<std::int64_t, double>> out;
  for (const auto& [iteration, values] : by_iteration) out.emplace_back(iteration, median(values));
  return out;
}

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

}  // namespace

ComparedRun compare_run(const RunData& data, std::string dir) {
  ComparedRun run;
  run.dir = std::move(dir);
  run.ranks = data.ranks.size();
  std::set<std::string> run_ids;
  std::map<std::int64_t, std::vector<double>> step_ms, loss;
  std::vector<double> all_steps;
  for (const auto& [rank, rank_data] : data.ranks) {
    const std::string id = text_attribute(rank_data.resource, "nemo.run.id");
    if (!id.empty()) run_ids.insert(id);
    for (const Step& step : find_steps(rank_data).steps) {
      all_steps.push_back(step.duration_ms);
      if (!step.iteration) continue;
      step_ms[*step.iteration].push_back(step.duration_ms);
      const nlohmann::json* value =
          find_attribute(rank_data.spans[step.span].attributes, "megatron.loss");
      if (value != nullptr && value->is_number() && std::isfinite(value->get<double>())) {
        loss[*step.iteration].push_back(value->get<double>());
      }
    }
  }
  for (const std::string& id : run_ids) run.run_id += (run.run_id.empty() ? "" : ", ") + id;
  run.iterations = step_ms.size();
  if (!step_ms.empty()) {
    run.first_iteration = step_ms.begin()->first;
    run.last_iteration = step_ms.rbegin()->first;
  }
  run.step_ms = medians(step_ms);
  run.loss = medians(loss);
  if (!all_steps.empty()) run.median_step_ms = median(std::move(all_steps));
  if (!run.loss.empty()) run.final_loss = run.loss.back().second;
  return run;
}

std::string run_label(const ComparedRun& run) {
  return (run.run_id.empty() ? std::string("(no run id)") : run.run_id) + " (" + run.dir + ")";
}

std::string median_step_text(const ComparedRun& run) {
  return run.median_step_ms ? fixed(*run.median_step_ms, 1) : "-";
}

std::string final_loss_text(const ComparedRun& run) {
  return run.final_loss ? fixed(*run.final_loss, 4) : "-";
}

std::string iterations_text(const ComparedRun& run) {
  std::string text = std::to_string(run.iterations);
  if (run.first_iteration) {
    text += " (" + std::to_string(*run.first_iteration) + "-" +
            std::to_string(*run.last_iteration) + ")";
  }
  return text;
}

std::string run_summary_line(const ComparedRun& run) {
  std::string range;
  if (run.first_iteration) {
    range = " (" + std::to_string(*run.first_iteration) + "-" +
            std::to_string(*run.last_iteration) + ")";
  }
  return run_label(run) + ": " + std::to_string(run.ranks) + " ranks, " +
         std::to_string(run.iterations) + " iterations" + range + ", median step " +
         (run.median_step_ms ? median_step_text(run) + " ms" : std::string("-")) + ", final loss " +
         final_loss_text(run);
}

}  // namespace lens::report
