// A LENS_SPAN site whose group no vocabulary registers can never record: it is named on stderr
// at its first pass, once per site (the caller's function-local static runs this once).
// Thread-safety: the registry's own lock; one fprintf per report, so lines never interleave.
#include <cstdio>
#include <string>

#include "lens/detail/span_state.hpp"
#include "lens/groups.hpp"

namespace lens::detail {

SpanGroupHandle checked_site_group_handle(const SpanSite& site, const char* file, int line) {
  const SpanGroupHandle handle = span_group_handle(site.group);
  try {
    const std::vector<std::string> registered = registered_span_groups();
    bool known = false;
    for (const std::string& group : registered) known = known || group == site.group;
    if (!known) {
      const std::string message =
          "lens: warning: span site '" + std::string(site.name) + "' at " + file + ":" +
          std::to_string(line) + " uses the span group '" + std::string(site.group) +
          "', which no vocabulary registers, so it never records; register it with "
          "lens::register_span_groups() before the site first runs, or use a registered group\n";
      std::fputs(message.c_str(), stderr);
    }
  } catch (...) {  // out of memory while reporting: the site still works, unreported
  }
  return handle;
}

}  // namespace lens::detail
