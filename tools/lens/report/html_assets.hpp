// The pages' inline stylesheet and scripts, kept as real files in report/assets/ and embedded at
// build time (cmake/LensEmbed.cmake). The scripts read the JSON data block (id "lens-data") and
// draw the charts; they touch the page only through DOM methods and textContent, never markup,
// so data cannot inject anything. Immutable data: safe from any thread.
#pragma once

#include <string_view>

namespace lens::report {

// report/assets/report.css: the stylesheet of every page (run report, comparison, job ledger).
std::string_view report_css();
// report/assets/report.js: the run report's timeline, heatmaps and charts.
std::string_view report_script();
// report/assets/compare.js: the comparison page's step-time and loss charts.
std::string_view compare_script();

}  // namespace lens::report
