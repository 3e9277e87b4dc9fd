// SIGINT, SIGTERM and SIGCHLD read through a signalfd (blocked for normal delivery here; the
// ranks get them unblocked, see rank_processes.cpp). The previous mask comes back on scope exit.
// Owned by the thread that created it.
#pragma once

#include <signal.h>

namespace lens::cli {

class SignalReader {
 public:
  SignalReader();
  ~SignalReader();
  SignalReader(const SignalReader&) = delete;
  SignalReader& operator=(const SignalReader&) = delete;

  int fd() const { return fd_; }
  // The SIGINT or SIGTERM read since the last call (0 when none; SIGCHLD is only a wake-up).
  int take();

 private:
  int fd_ = -1;
  sigset_t previous_{};
};

}  // namespace lens::cli
