// The task queue `lens collect` gives cpp-httplib: one thread per connection, up to a cap.
// cpp-httplib's default is a fixed pool of 8 workers, each holding its connection for the whole
// keep-alive: eight slow or idle clients (or eight exporters between exports) stalled every other
// client, and requests waited in the queue until their clients had given up. Here every
// connection gets a thread at once (up to `max_threads`; past that connections wait their turn),
// and threads left idle for a while exit, so a burst does not keep its threads.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace lens::cli {

class HttpConnectionThreads final : public httplib::TaskQueue {
 public:
  explicit HttpConnectionThreads(std::size_t max_threads,
                                 std::chrono::milliseconds idle_linger = std::chrono::seconds(5));
  ~HttpConnectionThreads() override;

  HttpConnectionThreads(const HttpConnectionThreads&) = delete;
  HttpConnectionThreads& operator=(const HttpConnectionThreads&) = delete;

  void enqueue(std::function<void()> task) override;
  // Runs what is queued, then joins every thread. Idempotent.
  void shutdown() override;

 private:
  void work();
  void join_finished_locked();

  const std::size_t max_threads_;
  const std::chrono::milliseconds idle_linger_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread::id> finished_;  // exited threads, to be joined
  std::size_t busy_ = 0;
  bool shutting_down_ = false;
};

}  // namespace lens::cli
