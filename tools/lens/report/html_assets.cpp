// The pages' stylesheet and scripts (see html_assets.hpp): the bytes of report/assets/*, each
// after a newline, so that the opening <style> or <script> tag stands on a line of its own.
#include "report/html_assets.hpp"

namespace lens::report {
namespace {

// The generated lists are the assets' exact bytes (no terminator): sizeof is the length.
constexpr char kCss[] = {
    '\n',
#include "report/assets/report.css.inc"
};

constexpr char kScript[] = {
    '\n',
#include "report/assets/report.js.inc"
};

constexpr char kCompareScript[] = {
    '\n',
#include "report/assets/compare.js.inc"
};

}  // namespace

std::string_view report_css() { return {kCss, sizeof(kCss)}; }
std::string_view report_script() { return {kScript, sizeof(kScript)}; }
std::string_view compare_script() { return {kCompareScript, sizeof(kCompareScript)}; }

}  // namespace lens::report
