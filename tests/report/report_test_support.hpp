// Builds the report's analysis straight from fixture requests, without files, and its page in
// memory with the JSON its script reads.
#pragma once

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "report/analysis.hpp"
#include "report/html_writer.hpp"
#include "report/run_builder.hpp"
#include "report_fixtures.hpp"

namespace lens::report::testing {

inline RunAnalysis analyze_spec(const RunSpec& spec, StragglerOptions options = {},
                                bool with_metrics = true) {
  RunBuilder builder;
  for (const auto& request : make_traces(spec)) builder.on_traces(request);
  if (with_metrics) {
    for (const auto& request : make_metrics(spec, true)) builder.on_metrics(request);
  }
  return analyze(builder.take(), options);
}

// The page write_html writes for `analysis` with `context`.
inline std::string html_page(const RunAnalysis& analysis, const HtmlContext& context = {}) {
  std::ostringstream out;
  write_html(analysis, context, out);
  return out.str();
}

// The JSON the page's script reads (its lens-data block).
inline nlohmann::json page_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"lens-data\">";
  const std::size_t start = html.find(open) + open.size();
  return nlohmann::json::parse(html.substr(start, html.find("</script>", start) - start));
}

}  // namespace lens::report::testing
