// daemon/worker: jobs run off the loop, one at a time and in order, and their results come back on
// the loop in that order; destroying the worker runs what is still queued. The ThreadSanitizer
// build (the `tsan` preset) runs these with the loop and the worker on two threads.
#include "daemon/worker.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace oppx::daemon {
namespace {

TEST(Worker, JobsRunOffTheLoopInOrderAndTheirResultsComeBackOnIt) {
  boost::asio::io_context io;
  const auto loop_thread = std::this_thread::get_id();
  std::vector<int> ran, back;  // ran: touched by the worker only, until its jobs are done
  bool off_loop = true, on_loop = true;
  {
    Worker worker(io);
    for (int i = 0; i < 200; ++i) {
      worker.run(
          [i, &ran, &off_loop, loop_thread] {
            off_loop = off_loop && std::this_thread::get_id() != loop_thread;
            ran.push_back(i);
            return std::make_unique<std::string>(std::to_string(i));  // a result that only moves
          },
          [&back, &on_loop, loop_thread](std::unique_ptr<std::string> r) {
            on_loop = on_loop && std::this_thread::get_id() == loop_thread;
            back.push_back(std::stoi(*r));
          });
    }
    io.run();  // returns once every result came back: each job holds the loop's work until then
  }
  std::vector<int> expected(200);
  for (int i = 0; i < 200; ++i) expected[i] = i;
  EXPECT_EQ(ran, expected);
  EXPECT_EQ(back, expected);
  EXPECT_TRUE(off_loop);
  EXPECT_TRUE(on_loop);
}

TEST(Worker, DestroyingItRunsWhatIsQueued) {
  boost::asio::io_context io;
  int ran = 0;
  {
    Worker worker(io);
    for (int i = 0; i < 50; ++i) {
      worker.run([&ran] { return ++ran; }, [](int) {});
    }
  }  // joined: every job ran (their results wait on the loop, which this test does not run)
  EXPECT_EQ(ran, 50);
}

}  // namespace
}  // namespace oppx::daemon
