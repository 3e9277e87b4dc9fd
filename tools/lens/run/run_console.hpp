// `lens run`'s terminal: rank output and the progress line on one stdout; on a terminal the
// progress line is the last line, erased before each output line and drawn again after it.
// One thread (the run's loop).
#pragma once

#include <string>

namespace lens::cli {

// The width of the terminal on stdout (80 when it is not one).
int terminal_width();

class Console {
 public:
  explicit Console(bool tty) : tty_(tty) {}

  bool tty() const { return tty_; }
  // "[rank R] text".
  void rank_line(int rank, const std::string& text);
  // A line of `lens run`'s own.
  void message(const std::string& text);
  // The progress line (on a terminal only).
  void status(std::string text);
  // Erases the progress line for good.
  void finish();

 private:
  void clear_status();
  void draw_status();

  bool tty_;
  bool shown_ = false;
  std::string status_;
};

}  // namespace lens::cli
