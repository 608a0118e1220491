// The waits of waits.h: inotify for files, the daemon's mcp/subscribe for connectors, pidfds for
// exits, waitid on a thread for stops, daemon/status `until` for the daemon's own figures.
#include "tests/support/waits.h"

#include "common/sync_client.h"
#include "proto/daemon_api.h"

#include <boost/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oppx::test {

namespace {

using Clock = std::chrono::steady_clock;

int left_ms(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<long long>(0, left));
}

// `pred` first, then each time `fd` is readable (its bytes read and dropped), until the deadline.
// A last check at the deadline catches a change whose event came before the watch began.
bool when_readable(int fd, const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    int ms = left_ms(deadline);
    if (ms == 0) return pred();
    pollfd p{fd, POLLIN, 0};
    int rc = ::poll(&p, 1, ms);
    if (rc < 0 && errno != EINTR) return pred();
    if (rc > 0) {
      if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) return pred();
      char buf[4096];
      if (::read(fd, buf, sizeof buf) <= 0) return pred();
    }
  }
}

// `dir` watched, or while it is missing its nearest ancestor that exists (whose change may be
// `dir` being made): true once `dir` itself is watched.
bool watch_nearest(int fd, const std::string& dir) {
  constexpr std::uint32_t kMask =
      IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB;
  for (std::string d = dir;;) {
    if (::inotify_add_watch(fd, d.c_str(), kMask) >= 0) return d == dir;
    if ((errno != ENOENT && errno != ENOTDIR) || d == "/" || d == ".") return false;
    auto slash = d.find_last_of('/');
    d = slash == std::string::npos ? "." : slash == 0 ? "/" : d.substr(0, slash);
  }
}

}  // namespace

// Without inotify (never on the Linux this runs on) there is nothing to wait on: one check, and
// a test that needed to wait fails with its own message rather than sleep.
bool when_files_change(const std::string& dir, const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return pred();
  bool exact = watch_nearest(fd, dir);
  bool ok = when_readable(
      fd,
      [&] {
        if (!exact) exact = watch_nearest(fd, dir);  // made since: watched from now on, then checked
        return pred();
      },
      timeout);
  ::close(fd);
  return ok;
}

bool when_file_changes(const std::string& file, const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto slash = file.find_last_of('/');
  return when_files_change(slash == std::string::npos ? "." : file.substr(0, slash), pred, timeout);
}

bool when_connectors_change(const std::string& socket, const std::function<bool()>& pred,
                            std::chrono::milliseconds timeout) {
  // No daemon yet: the check may start one (through the CLI, as most do), and is made again once
  // subscribed. Still none: nothing will change what mcp/list reports, so no more checks.
  auto c = SyncClient::connect(socket);
  if (!c) {
    if (pred()) return true;
    c = SyncClient::connect(socket);
    if (!c) return pred();
  }
  if (!c->call("hello", boost::json::object{{"protocol", proto::kProtocolVersion}, {"client", "test-watch"}}, 5s) ||
      !c->call("mcp/subscribe", nullptr, 10s))
    return pred();
  return when_readable(c->fd(), pred, timeout);
}

bool wait_for_exits(const std::set<pid_t>& pids, std::chrono::milliseconds timeout) {
  std::vector<pollfd> fds;
  for (pid_t pid : pids) {
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});  // else it is gone already
  }
  auto deadline = Clock::now() + timeout;
  while (std::any_of(fds.begin(), fds.end(), [](const pollfd& p) { return p.fd >= 0; })) {
    int ms = left_ms(deadline);
    if (ms == 0) break;
    int rc = ::poll(fds.data(), fds.size(), ms);
    if (rc < 0 && errno != EINTR) break;
    for (auto& p : fds) {
      if (p.fd >= 0 && p.revents) {
        ::close(p.fd);
        p.fd = -1;  // poll skips it from now on
      }
    }
  }
  bool all = true;
  for (auto& p : fds) {
    if (p.fd >= 0) {
      all = false;
      ::close(p.fd);
    }
  }
  return all;
}

bool wait_for_stop(pid_t child, std::chrono::milliseconds timeout) {
  std::mutex mu;
  std::condition_variable cv;
  bool told = false, stopped = false, killed = false;
  std::thread waiter([&] {
    siginfo_t info{};
    int rc;
    do {
      rc = ::waitid(P_PID, static_cast<id_t>(child), &info, WSTOPPED | WEXITED | WNOWAIT);
    } while (rc != 0 && errno == EINTR);
    std::lock_guard l(mu);
    told = true;
    stopped = rc == 0 && info.si_code == CLD_STOPPED;
    cv.notify_all();
  });
  {
    std::unique_lock l(mu);
    killed = !cv.wait_for(l, timeout, [&] { return told; });
    if (killed) ::kill(child, SIGKILL);  // ends the waitid
  }
  waiter.join();
  return stopped && !killed;
}

StatusWait status_until(SyncClient& c, boost::json::object until, std::chrono::milliseconds timeout) {
  StatusWait w;
  auto r = c.call("daemon/status", boost::json::object{{"until", std::move(until)}, {"timeout_ms", timeout.count()}},
                  timeout + 10s);
  if (!r) {
    w.error = r.error().message;
    return w;
  }
  if (!r->is_object()) {
    w.error = "not an object: " + boost::json::serialize(*r);
    return w;
  }
  w.status = r->as_object();
  const boost::json::value* met = w.status.if_contains("until_met");
  w.met = met && *met == boost::json::value(true);
  return w;
}

StatusWait status_until(const std::string& socket, boost::json::object until, std::chrono::milliseconds timeout) {
  auto c = SyncClient::connect(socket);
  if (!c) return StatusWait{false, {}, c.error().message};
  return status_until(*c, std::move(until), timeout);
}

std::string StatusWait::describe() const {
  return error.empty() ? "the status at the deadline: " + boost::json::serialize(status) : "no status: " + error;
}

}  // namespace oppx::test
