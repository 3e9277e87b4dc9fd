// One thread per HTTP connection, up to a cap (see http_connection_threads.hpp).
#include "collect_server/http_connection_threads.hpp"

#include <system_error>
#include <utility>

namespace lens::cli {

HttpConnectionThreads::HttpConnectionThreads(std::size_t max_threads,
                                             std::chrono::milliseconds idle_linger)
    : max_threads_(max_threads == 0 ? 1 : max_threads), idle_linger_(idle_linger) {}

HttpConnectionThreads::~HttpConnectionThreads() { shutdown(); }

void HttpConnectionThreads::enqueue(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mutex_);
  join_finished_locked();
  tasks_.push_back(std::move(task));
  const std::size_t idle = threads_.size() - busy_;
  if (tasks_.size() > idle && threads_.size() < max_threads_ && !shutting_down_) {
    try {
      std::thread thread([this] { work(); });
      const std::thread::id id = thread.get_id();
      threads_.emplace(id, std::move(thread));
      return;
    } catch (const std::system_error&) {
      // No thread to be had (a process or memory limit): the connection waits for a thread
      // that frees up, or, with none at all, is served here, on the accept loop.
      if (threads_.empty()) {
        std::function<void()> inline_task = std::move(tasks_.back());
        tasks_.pop_back();
        lock.unlock();
        inline_task();
        return;
      }
    }
  }
  wake_.notify_one();
}

void HttpConnectionThreads::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const bool has_task =
        wake_.wait_for(lock, idle_linger_, [this] { return shutting_down_ || !tasks_.empty(); });
    if (!has_task || tasks_.empty()) break;  // idle too long, or stopping with nothing left
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    ++busy_;
    lock.unlock();
    task();
    task = nullptr;  // what the task holds goes before the lock is taken again
    lock.lock();
    --busy_;
  }
  // Joined by the next enqueue or by shutdown; the lock is released as this returns.
  finished_.push_back(std::this_thread::get_id());
}

void HttpConnectionThreads::join_finished_locked() {
  for (const std::thread::id id : finished_) {
    const auto it = threads_.find(id);
    if (it != threads_.end()) {
      it->second.join();
      threads_.erase(it);
    }
  }
  finished_.clear();
}

void HttpConnectionThreads::shutdown() {
  std::map<std::thread::id, std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutting_down_ = true;
    threads.swap(threads_);
    finished_.clear();
  }
  wake_.notify_all();
  for (auto& [id, thread] : threads) thread.join();
}

}  // namespace lens::cli
