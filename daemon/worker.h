// The daemon's one thread for blocking work (file writes with their fsyncs, loading the TLS
// roots), so that a slow disk delays nobody's call on the loop. Jobs run one at a time, in the
// order given (two writes of one file land in that order); a job touches only what it was
// given, and its result comes back as a handler posted to the io_context, where the daemon's
// state lives. Destroying the worker runs what is queued, then joins.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace oppx::daemon {

class Worker {
 public:
  explicit Worker(boost::asio::io_context& io);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // common/fs atomic_write of `content` to `path`, on the worker; a failure is logged (on the
  // loop) as "cannot save <what>: …".
  void write_file(std::string path, std::string content, int mode, std::string what);

  // Jobs given and not finished (daemon/status "worker_jobs"); a job's end signals
  // common/changes.h, from the worker thread, after it has closed what it opened.
  std::size_t jobs() const { return jobs_given_.load(std::memory_order_acquire); }

  // Runs `job` on the worker thread, then `done(result)` on the io_context (which keeps
  // running until then).
  template <class Job, class Done>
  void run(Job job, Done done) {
    auto state = std::make_shared<std::pair<Job, Done>>(std::move(job), std::move(done));
    auto guard = boost::asio::make_work_guard(io_);
    push([state, guard, &io = io_] {
      auto result = state->first();
      boost::asio::post(io, [state, guard, result = std::move(result)]() mutable { state->second(std::move(result)); });
    });
  }

 private:
  void push(std::function<void()> job);
  void loop();

  boost::asio::io_context& io_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::atomic<std::size_t> jobs_given_{0};
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the rest is ready
};

}  // namespace oppx::daemon
