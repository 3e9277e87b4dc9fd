// The comparison page (see compare_html_writer.hpp).
#include "report/compare_html_writer.hpp"

#include <cmath>

#include "report/html_assets.hpp"
#include "report/html_writer.hpp"

namespace lens::report {
namespace {

using nlohmann::json;

// Distinct, colour-blind friendly (Tableau 10); runs past ten reuse them in order.
constexpr const char* kRunColors[] = {"#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1",
                                      "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"};

std::string run_color(std::size_t index) {
  return kRunColors[index % (sizeof(kRunColors) / sizeof(kRunColors[0]))];
}

json points_json(const std::vector<std::pair<std::int64_t, double>>& points, double scale) {
  json out = json::array();
  for (const auto& [iteration, value] : points) {
    out.push_back({iteration, std::round(value * scale) / scale});
  }
  return out;
}

}  // namespace

json comparison_json(const std::vector<ComparedRun>& runs) {
  json list = json::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    list.push_back({{"label", run_label(runs[i])},
                    {"color", run_color(i)},
                    {"stepMs", points_json(runs[i].step_ms, 1e3)},
                    {"loss", points_json(runs[i].loss, 1e6)}});
  }
  return {{"runs", std::move(list)}};
}

void write_comparison_html(const std::vector<ComparedRun>& runs,
                           const std::vector<std::string>& warnings, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<title>lens report: "
      << runs.size() << " runs compared</title>\n<style>" << report_css()
      << "</style>\n</head>\n<body>\n<h1>lens report: " << runs.size() << " runs compared</h1>\n";
  // The legend of both charts, and the run table.
  out << "<table><tr><th>run</th><th>run id</th><th>directory</th><th>ranks</th>"
         "<th>iterations</th><th>median step ms</th><th>final loss</th></tr>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ComparedRun& run = runs[i];
    out << "<tr class=\"run-legend\"><td><span class=\"legend-swatch\" style=\"background:"
        << run_color(i) << "\"></span>" << html_escape(run_label(run)) << "</td><td>"
        << html_escape(run.run_id.empty() ? "-" : run.run_id) << "</td><td>" << html_escape(run.dir)
        << "</td><td class=\"num\">" << run.ranks << "</td><td class=\"num\">"
        << html_escape(iterations_text(run)) << "</td><td class=\"num\">" << median_step_text(run)
        << "</td><td class=\"num\">" << final_loss_text(run) << "</td></tr>\n";
  }
  out << "</table>\n"
         "<h2>Step time per iteration (median across ranks, ms)</h2>\n"
         "<div class=\"chart\"><svg id=\"step-chart\"></svg></div>\n"
         "<h2>Loss per iteration (median across ranks)</h2>\n"
         "<div class=\"chart\"><svg id=\"loss-chart\"></svg></div>\n"
         "<p class=\"note\">From the megatron.train_step spans: their duration (exact) and "
         "their megatron.loss attribute. Colours as in the table above.</p>\n";
  if (!warnings.empty()) {
    out << "<h2>Warnings</h2>\n<ul class=\"warnings\">\n";
    for (const std::string& warning : warnings) out << "<li>" << html_escape(warning) << "</li>\n";
    out << "</ul>\n";
  }
  out << "<script type=\"application/json\" id=\"lens-data\">"
      << script_safe_json(
             comparison_json(runs).dump(-1, ' ', false, json::error_handler_t::replace))
      << "</script>\n<script>" << compare_script() << "</script>\n</body>\n</html>\n";
}

}  // namespace lens::report
