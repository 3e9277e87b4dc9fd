// Following logs.jsonl for the ranks' hang reports (see run_hangs.hpp).
#include "run/run_hangs.hpp"

#include <algorithm>
#include <cstdio>

namespace lens::cli {

void RunHangs::update() {
  logs_.read([this](std::string_view line) { log_.consume_line(line); });
}

std::string RunHangs::line_if_due(Clock::time_point now) {
  if (log_.records() == shown_records_) return {};
  if (!changed_at_) changed_at_ = now;
  int hanging = 0;
  double resumed_after = 0.0;
  for (const auto& [rank, hang] : log_.ranks()) {
    if (!hang.resumed) ++hanging;
    if (hang.resumed) resumed_after = std::max(resumed_after, hang.resumed_after_s);
  }
  if (hanging < world_size_ && now - *changed_at_ < kSettle) return {};
  shown_records_ = log_.records();
  changed_at_.reset();
  if (hanging > 0) {
    hang_shown_ = true;
    // The verdict joined by collective first (when a collective is open), then where each is.
    std::string text;
    for (const std::string& verdict : report::hang_verdicts(log_.ranks())) {
      text += verdict + "\nlens run: ";
    }
    return text + report::no_progress_line(log_.ranks());
  }
  if (!hang_shown_) return {};
  hang_shown_ = false;
  char text[64];
  std::snprintf(text, sizeof(text), "progress resumed after %.0f s", resumed_after);
  return text;
}

}  // namespace lens::cli
