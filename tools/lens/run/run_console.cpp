// `lens run`'s terminal (see run_console.hpp).
#include "run/run_console.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

namespace lens::cli {

int terminal_width() {
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

void Console::rank_line(int rank, const std::string& text) {
  clear_status();
  std::printf("[rank %d] %s\n", rank, text.c_str());
  draw_status();
}

void Console::message(const std::string& text) {
  clear_status();
  std::printf("%s\n", text.c_str());
  draw_status();
}

void Console::status(std::string text) {
  if (!tty_) return;
  status_ = std::move(text);
  clear_status();
  draw_status();
}

void Console::finish() {
  clear_status();
  status_.clear();
  std::fflush(stdout);
}

void Console::clear_status() {
  if (tty_ && shown_) std::fputs("\r\033[K", stdout);
  shown_ = false;
}

void Console::draw_status() {
  if (tty_ && !status_.empty()) {
    std::fputs(status_.c_str(), stdout);
    shown_ = true;
  }
  std::fflush(stdout);
}

}  // namespace lens::cli
