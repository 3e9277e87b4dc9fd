// SIGINT, SIGTERM and SIGCHLD through a signalfd (see signal_reader.hpp).
#include "run/signal_reader.hpp"

#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <initializer_list>

namespace lens::cli {

SignalReader::SignalReader() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int signal : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&mask, signal);
  pthread_sigmask(SIG_BLOCK, &mask, &previous_);
  fd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

SignalReader::~SignalReader() {
  if (fd_ >= 0) ::close(fd_);
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

int SignalReader::take() {
  int got = 0;
  signalfd_siginfo info{};
  while (fd_ >= 0 && ::read(fd_, &info, sizeof(info)) == sizeof(info)) {
    if (info.ssi_signo == SIGINT || info.ssi_signo == SIGTERM) {
      got = static_cast<int>(info.ssi_signo);
    }
  }
  return got;
}

}  // namespace lens::cli
