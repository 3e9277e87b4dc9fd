// `lens report` end to end: read DIR, analyse, write the HTML page and the Perfetto trace, print
// the summary. Returns the exit status: 0 written, 1 an output could not be written, 2 invalid
// input (one line on `err` starting "lens report: "). With options.compare set it reads each run
// and writes only the comparison page (compare_html_writer.hpp). Thread-safe for distinct outputs.
#pragma once

#include <ostream>

#include "report/report_options.hpp"

namespace lens::report {

int run_report(const ReportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace lens::report
