// `lens report DIR` (or `lens report A B ...` to compare runs): the run report over OTLP JSON files
// (tools/lens/report/, docs/report.md).
#include <iostream>

#include "cli/commands.hpp"
#include "report/report.hpp"
#include "report/report_options.hpp"

namespace lens::cli {

int report_command(const std::vector<std::string>& args) {
  Result<report::ReportOptions> options = report::parse_report_options(args);
  if (!options.ok()) {
    std::cerr << "lens report: " << options.message() << "\n";
    return 2;
  }
  if (options->help) {
    std::cout << report::kReportUsage;
    return 0;
  }
  return report::run_report(*options, std::cout, std::cerr);
}

}  // namespace lens::cli
