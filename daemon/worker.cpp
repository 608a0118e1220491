// Worker: a queue under a mutex and one thread that drains it. The mutex guards the queue
// only; the jobs share nothing with the loop but what they were given.
#include "daemon/worker.h"

#include "common/changes.h"
#include "common/fs.h"
#include "common/log.h"

namespace oppx::daemon {

Worker::Worker(boost::asio::io_context& io) : io_(io), thread_([this] { loop(); }) {}

Worker::~Worker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void Worker::write_file(std::string path, std::string content, int mode, std::string what) {
  run([path = std::move(path), content = std::move(content), mode] { return atomic_write(path, content, mode); },
      [what = std::move(what)](boost::system::result<void, std::string> r) {
        if (!r) log::warn("cannot save {}: {}", what, r.error());
      });
}

void Worker::push(std::function<void()> job) {
  jobs_given_.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void Worker::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, with nothing left to run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
    job = nullptr;  // what it held goes first
    jobs_given_.fetch_sub(1, std::memory_order_acq_rel);
    changes::changed();
  }
}

}  // namespace oppx::daemon
