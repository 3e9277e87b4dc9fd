// The report page's inline stylesheet and script. The script reads the JSON data block
// (id "lens-data") and draws the timeline and charts as SVG; it touches the page only through
// DOM methods and textContent, never markup, so data cannot inject anything.
#pragma once

#include <string_view>

namespace lens::report {

std::string_view report_css();
std::string_view report_script();

}  // namespace lens::report
