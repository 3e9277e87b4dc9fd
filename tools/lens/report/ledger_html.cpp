// The job ledger's HTML (see job_ledger.hpp): one stacked bar per run, scaled to the job's wall
// time, and tables by cause per run and per rank (open up to 16 ranks). Static markup only, every
// text escaped; no script. Pure functions; thread-safe.
#include <cstdio>
#include <sstream>

#include "report/html_assets.hpp"
#include "report/html_writer.hpp"
#include "report/job_ledger.hpp"

namespace lens::report {
namespace {

// One colour per cause, in Cause order: work in blues and greens, overheads in yellows, losses in
// reds, the idle restart gap in grey.
constexpr std::array<const char*, kCauseCount> kCauseColors = {
    "#9ecae9",  // startup
    "#59a14f",  // productive
    "#b07aa1",  // checkpoint_load
    "#d4a6c8",  // checkpoint_save
    "#76b7b2",  // evaluation
    "#edc948",  // straggler_wait
    "#e15759",  // lost
    "#f28e2b",  // hang
    "#9c2f2f",  // failure
    "#bab0ac",  // restart
    "#4e79a7",  // shutdown
};

constexpr std::array<const char*, kCauseCount> kCauseLabels = {
    "start-up",           "productive", "checkpoint load",
    "checkpoint save",    "evaluation", "straggler wait",
    "work lost (redone)", "hang",       "failure",
    "restart gap",        "shutdown"};

std::string seconds(std::int64_t nanos) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", static_cast<double>(nanos) / 1e9);
  return text;
}

std::string percent(std::int64_t part, std::int64_t whole) {
  if (whole <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f%%",
                100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

std::string iterations(const RunLedger& run) {
  if (!run.first_iteration) return "none";
  std::string text =
      std::to_string(*run.first_iteration) + "-" + std::to_string(*run.last_iteration);
  return text;
}

std::string redone(const RunLedger& run) {
  if (run.redone == 0) return "0";
  return std::to_string(run.redone) + " (" + std::to_string(*run.redone_first) + "-" +
         std::to_string(*run.redone_last) + ")";
}

std::string run_label(const RunLedger& run, std::size_t index) {
  return "run " + std::to_string(index + 1) + (run.run_id.empty() ? "" : " (" + run.run_id + ")");
}

// The section's own styles (it also goes into the run report's page).
constexpr const char* kLedgerCss =
    ".ledger-legend{margin:.5em 0}.ledger-key{white-space:nowrap;margin-right:.8em}"
    ".ledger-row{display:flex;align-items:center;margin:.3em 0}"
    ".ledger-name{width:17em;flex:none;font-size:.9em}"
    ".ledger-track{flex:1;background:#f3f3f3}.ledger-bars{margin-bottom:1em}"
    ".ledger-bar{display:flex;height:1.8em}.ledger-bar span{display:block;height:100%}"
    ".ledger-table td,.ledger-table th{padding:.15em .6em}";

}  // namespace

std::string ledger_html(const JobLedger& ledger) {
  std::ostringstream out;
  out << "<style>" << kLedgerCss << "</style>\n<h2 id=\"job-ledger\">Job ledger</h2>\n";
  const std::int64_t wall = ledger.wall_ns();
  out << "<p>" << ledger.runs.size() << " runs, wall time " << seconds(wall)
      << " s from the first span to the last; " << ledger.redone
      << " iterations done again after a resume; productive "
      << percent(ledger.total[index_of(Cause::productive)], wall)
      << ". Each bar is a run and the restart gap after it, its length to scale; its parts are "
         "the mean over ranks.</p>\n";
  if (ledger.job_uuids.size() > 1) {
    out << "<p class=\"note\">These runs carry " << ledger.job_uuids.size()
        << " job identities (nemo.lens.job_uuid): they may not be one job.</p>\n";
  }
  out << "<div class=\"ledger-legend\">";
  for (std::size_t c = 0; c < kCauseCount; ++c) {
    out << "<span class=\"ledger-key\"><span class=\"legend-swatch\" style=\"background:"
        << kCauseColors[c] << "\"></span>" << kCauseLabels[c] << "</span> ";
  }
  out << "</div>\n<div class=\"ledger-bars\">\n";
  for (std::size_t k = 0; k < ledger.runs.size(); ++k) {
    const RunLedger& run = ledger.runs[k];
    const std::int64_t owned = run.owned_end_ns - run.start_ns;
    out << "<div class=\"ledger-row\"><div class=\"ledger-name\">" << html_escape(run_label(run, k))
        << "<br><small>" << run_end_name(run.end) << ", " << seconds(owned)
        << " s</small></div><div class=\"ledger-track\"><div class=\"ledger-bar\" style=\"width:"
        << (wall > 0 ? 100.0 * static_cast<double>(owned) / static_cast<double>(wall) : 0.0)
        << "%\">";
    for (std::size_t c = 0; c < kCauseCount; ++c) {
      if (run.time[c] <= 0 || owned <= 0) continue;
      out << "<span style=\"width:"
          << 100.0 * static_cast<double>(run.time[c]) / static_cast<double>(owned)
          << "%;background:" << kCauseColors[c] << "\" title=\"" << kCauseLabels[c] << ": "
          << seconds(run.time[c]) << " s\"></span>";
    }
    out << "</div></div></div>\n";
  }
  out << "</div>\n";

  out << "<table class=\"ledger-table\"><tr><th>cause</th><th>job (s)</th><th>share</th>";
  for (std::size_t k = 0; k < ledger.runs.size(); ++k) {
    out << "<th>" << html_escape(run_label(ledger.runs[k], k)) << " (s)</th>";
  }
  out << "</tr>\n";
  for (std::size_t c = 0; c < kCauseCount; ++c) {
    out << "<tr><td><span class=\"legend-swatch\" style=\"background:" << kCauseColors[c]
        << "\"></span>" << kCauseLabels[c] << "</td><td class=\"num\">" << seconds(ledger.total[c])
        << "</td><td class=\"num\">" << percent(ledger.total[c], wall) << "</td>";
    for (const RunLedger& run : ledger.runs) {
      out << "<td class=\"num\">" << seconds(run.time[c]) << "</td>";
    }
    out << "</tr>\n";
  }
  std::int64_t sum = 0;
  for (std::int64_t value : ledger.total) sum += value;
  out << "<tr><th>sum</th><th class=\"num\">" << seconds(sum) << "</th><th class=\"num\">"
      << percent(sum, wall) << "</th>";
  for (const RunLedger& run : ledger.runs) {
    out << "<th class=\"num\">" << seconds(run.owned_end_ns - run.start_ns) << "</th>";
  }
  out << "</tr>\n</table>\n";

  out << "<h3>Runs</h3>\n<table><tr><th>run</th><th>directory</th><th>ended</th><th>ranks</th>"
         "<th>iterations</th><th>redone later</th><th>run uuid</th></tr>\n";
  for (std::size_t k = 0; k < ledger.runs.size(); ++k) {
    const RunLedger& run = ledger.runs[k];
    out << "<tr><td>" << html_escape(run_label(run, k)) << "</td><td>" << html_escape(run.source)
        << "</td><td>" << run_end_name(run.end) << "</td><td class=\"num\">" << run.ranks
        << "</td><td class=\"num\">" << iterations(run) << "</td><td class=\"num\">" << redone(run)
        << "</td><td>" << html_escape(run.run_uuid.empty() ? "-" : run.run_uuid) << "</td></tr>\n";
  }
  out << "</table>\n";

  // Open while it is short.
  out << "<details" << (ledger.ranks.size() <= 16 ? " open" : "")
      << "><summary>Per rank (s)</summary>\n<table><tr><th>rank</th>";
  for (std::size_t c = 0; c < kCauseCount; ++c) out << "<th>" << kCauseLabels[c] << "</th>";
  out << "</tr>\n";
  for (const RankLedger& rank : ledger.ranks) {
    out << "<tr><td class=\"num\">" << rank.rank << "</td>";
    for (std::size_t c = 0; c < kCauseCount; ++c) {
      out << "<td class=\"num\">" << seconds(rank.time[c]) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table>\n</details>\n";
  return out.str();
}

std::string ledger_page(const JobLedger& ledger, const std::vector<std::string>& sources,
                        const std::vector<std::string>& warnings) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         "<title>lens report: job ledger</title>\n<style>"
      << report_css() << "</style>\n</head>\n<body>\n<h1>lens report: job ledger</h1>\n<p>From ";
  for (std::size_t i = 0; i < sources.size(); ++i) {
    out << (i == 0 ? "" : ", ") << "<code>" << html_escape(sources[i]) << "</code>";
  }
  out << ".</p>\n" << ledger_html(ledger);
  out << "<p class=\"note\">Every instant of each rank goes to one cause, in this order where "
         "several apply: checkpoint load, checkpoint save, evaluation, work lost, straggler wait, "
         "productive, start-up, then how the run ended (hang, failure, shutdown) and the restart "
         "gap (docs/report.md, \"Job ledger\").</p>\n";
  if (!warnings.empty()) {
    out << "<h2>Warnings</h2>\n<ul class=\"warnings\">\n";
    for (const std::string& warning : warnings) out << "<li>" << html_escape(warning) << "</li>\n";
    out << "</ul>\n";
  }
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace lens::report
