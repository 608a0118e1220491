// Subprocess: a child's exit is watched through its pidfd, an event like any other; its stderr is
// read as it comes, so a child flooding stderr never blocks, and written to its log with the
// secrets hidden. "Finished" waits for both the exit and the end of stderr, bounded by a short
// grace for a pipe that something outside its group still holds.
#include "daemon/subprocess.h"

#include "common/log.h"
#include "common/text.h"
#include "daemon/diagnose.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace oppx::daemon {

namespace asio = boost::asio;

namespace {

constexpr std::size_t kLogCap = 1u << 20;
// Stop: SIGTERM to the group after kTermGrace (its stdin is closed by then), SIGKILL kKillGrace later.
constexpr auto kTermGrace = std::chrono::seconds(1);
constexpr auto kKillGrace = std::chrono::seconds(2);
// After the exit, how long its stderr may take to end: a process outside its group (one that
// left it with setsid, where no PID namespace ends it) may hold the pipe open for good.
constexpr auto kStderrGrace = std::chrono::milliseconds(200);

// A child's exit, watched without ever blocking the loop. A completed wait on its pidfd is only a
// hint: Asio gives a freed descriptor slot to the next descriptor registered, so a readiness event
// queued for a pipe closed in the same turn can complete this wait early. The child is asked with
// WNOHANG and watched again while it runs; without a pidfd (at the descriptor limit) it is asked
// every kExitPoll. `done` gets its status once it is reaped, or why it cannot be, and never after
// cancel(). Nothing is called before start() returns.
class ExitWatch : public std::enable_shared_from_this<ExitWatch> {
 public:
  using Done = std::function<void(boost::system::result<ExitStatus, std::string>)>;

  static std::shared_ptr<ExitWatch> start(asio::io_context& io, pid_t pid, Done done) {
    std::shared_ptr<ExitWatch> w(new ExitWatch(io, pid, std::move(done)));
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    boost::system::error_code ec;
    if (fd < 0) {
      log::warn("no pidfd for pid {} ({}); its exit is looked for every {} ms", pid, std::strerror(errno),
                kExitPoll.count());
    } else if (w->pidfd_.assign(fd, ec); ec) {
      ::close(fd);
      log::warn("cannot watch the pidfd of pid {} ({}); its exit is looked for every {} ms", pid, ec.message(),
                kExitPoll.count());
    }
    w->arm();
    return w;
  }

  void cancel() {
    done_ = nullptr;
    boost::system::error_code ec;
    pidfd_.close(ec);
    retry_.cancel();
  }

 private:
  static constexpr auto kExitPoll = std::chrono::milliseconds(500);
  static constexpr auto kRecheck = std::chrono::milliseconds(5);

  ExitWatch(asio::io_context& io, pid_t pid, Done done) : pidfd_(io), retry_(io), pid_(pid), done_(std::move(done)) {}

  void check() {
    if (!done_) return;
    auto r = try_reap(pid_, pidfd_.is_open() ? pidfd_.native_handle() : -1);
    if (r && !*r) return arm();
    Done done = std::move(done_);
    cancel();
    if (r) return done(**r);
    done(r.error());
  }

  void arm() {
    // The pidfd is edge-triggered in Asio's epoll: one still readable while the child runs (a
    // wake-up a moment early) would not complete a new wait, so it is looked at again soon.
    pollfd p{pidfd_.is_open() ? pidfd_.native_handle() : -1, POLLIN, 0};
    if (pidfd_.is_open() && ::poll(&p, 1, 0) == 0) {
      pidfd_.async_wait(asio::posix::stream_descriptor::wait_read,
                        [self = shared_from_this()](boost::system::error_code ec) {
                          if (ec == asio::error::operation_aborted || !self->done_) return;
                          if (ec) {
                            log::warn("watching pid {} failed ({}); its exit is looked for every {} ms", self->pid_,
                                      ec.message(), kExitPoll.count());
                            self->pidfd_.close(ec);
                          }
                          self->check();
                        });
      return;
    }
    retry_.expires_after(pidfd_.is_open() ? kRecheck : kExitPoll);
    retry_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec == asio::error::operation_aborted || !self->done_) return;
      if (ec) log::warn("the exit timer of pid {} failed ({})", self->pid_, ec.message());
      self->check();
    });
  }

  asio::posix::stream_descriptor pidfd_;
  asio::steady_timer retry_;
  pid_t pid_;
  Done done_;
};

// Reaps `pid` whenever it goes and then releases its group; `term` and `kill` (when given) are
// the stop sequence's timers, cancelled once it is gone. Needs nobody to keep it.
void reap_in_background(asio::io_context& io, pid_t pid, std::shared_ptr<asio::steady_timer> term = {},
                        std::shared_ptr<asio::steady_timer> kill = {}) {
  ExitWatch::start(io, pid, [term, kill, pid](boost::system::result<ExitStatus, std::string> status) {
    if (term) term->cancel();
    if (kill) kill->cancel();
    if (!status) return log::error("stopping pid {}: {}", pid, status.error());
    release_group(pid);
  });
}

}  // namespace

struct Subprocess::Io {
  explicit Io(asio::io_context& io) : err(io), grace(io) {}
  asio::posix::stream_descriptor err;
  asio::steady_timer grace;
  std::shared_ptr<ExitWatch> exit_watch;
  std::array<char, 8192> buf{};
};

void Subprocess::spawn(asio::io_context& io, const SpawnSpec& spec, Options options, Started started) {
  spawn_child(io, spec,
              [&io, options = std::move(options),
               started = std::move(started)](boost::system::result<Child, SpawnError> r) mutable {
                if (!r) return started(r.error());
                std::shared_ptr<Subprocess> p(new Subprocess(io, *r, std::move(options)));
                p->open_log();
                p->io_objects_->err.assign(p->child_.err);
                p->child_.err = -1;  // the stream owns it now
                p->read_stderr();
                p->io_objects_->exit_watch = ExitWatch::start(
                    io, p->child_.pid,
                    [w = std::weak_ptr<Subprocess>(p)](boost::system::result<ExitStatus, std::string> status) {
                      if (auto self = w.lock()) self->exited(std::move(status));
                    });
                started(std::move(p));
              });
}

Subprocess::Subprocess(asio::io_context& io, Child child, Options options)
    : io_(io), child_(child), options_(std::move(options)), io_objects_(std::make_unique<Io>(io)) {}

Subprocess::~Subprocess() {
  for (int fd : {child_.in, child_.out, child_.err}) {
    if (fd >= 0) ::close(fd);
  }
  if (log_fd_ >= 0) ::close(log_fd_);
  if (io_objects_->exit_watch) io_objects_->exit_watch->cancel();
  if (!running_) return;
  // Nobody stopped it (its start was over before it ran, or its owner went away): it goes at once.
  signal_group(child_.pid, SIGKILL);
  reap_in_background(io_, child_.pid);
}

int Subprocess::take_stdin() { return std::exchange(child_.in, -1); }
int Subprocess::take_stdout() { return std::exchange(child_.out, -1); }
void Subprocess::on_finished(std::function<void(Finished)> fn) { on_finished_ = std::move(fn); }
std::int64_t Subprocess::pid() const { return running_ ? child_.pid : 0; }

void Subprocess::stop() {
  on_finished_ = nullptr;
  boost::system::error_code ec;
  io_objects_->err.close(ec);
  io_objects_->grace.cancel();
  if (!running_) return;
  running_ = false;
  if (io_objects_->exit_watch) io_objects_->exit_watch->cancel();
  io_objects_->exit_watch.reset();
  pid_t pid = child_.pid;
  auto term = std::make_shared<asio::steady_timer>(io_, kTermGrace);
  auto kill = std::make_shared<asio::steady_timer>(io_, kTermGrace + kKillGrace);
  term->async_wait([pid](boost::system::error_code e) {
    if (!e) signal_group(pid, SIGTERM);
  });
  kill->async_wait([pid](boost::system::error_code e) {
    if (!e) signal_group(pid, SIGKILL);
  });
  reap_in_background(io_, pid, term, kill);
}

void Subprocess::exited(boost::system::result<ExitStatus, std::string> status) {
  running_ = false;
  io_objects_->exit_watch.reset();
  if (status) {
    signal_group(child_.pid, SIGKILL);  // grandchildren left in its group go with it
    release_group(child_.pid);
  } else {
    // Not ours to reap any more: its group number may be someone else's by now.
    log::error("connector {}: {}", options_.name, status.error());
  }
  status_ = std::move(status);
  if (!stderr_open_) return finish();
  io_objects_->grace.expires_after(kStderrGrace);
  io_objects_->grace.async_wait([w = weak_from_this()](boost::system::error_code ec) {
    auto self = w.lock();
    if (ec || !self) return;
    self->stderr_ended();
  });
}

// Drained continuously; the log is capped and rotated.
void Subprocess::read_stderr() {
  io_objects_->err.async_read_some(
      asio::buffer(io_objects_->buf), [w = weak_from_this()](boost::system::error_code ec, std::size_t n) {
        auto self = w.lock();
        if (!self || ec == asio::error::operation_aborted || !self->stderr_open_) return;
        if (n > 0) self->take_stderr(std::string_view(self->io_objects_->buf.data(), n));
        if (ec) return self->stderr_ended();  // its end (or an error: nothing more comes either way)
        self->read_stderr();
      });
}

void Subprocess::stderr_ended() {
  if (!stderr_open_) return;
  stderr_open_ = false;
  boost::system::error_code ec;
  io_objects_->err.close(ec);
  append_log(mask_secrets(partial_, options_.secrets));
  keep_line(partial_);
  partial_.clear();
  if (status_) finish();
}

void Subprocess::finish() {
  io_objects_->grace.cancel();
  auto fn = std::move(on_finished_);
  on_finished_ = nullptr;
  if (fn) fn(Finished{*status_, last_lines_});
}

// Its log gets each line with the secrets hidden; a long line without its end yet is written in
// pieces, cut where no secret runs across the cut.
void Subprocess::take_stderr(std::string_view data) {
  partial_.append(data);
  std::size_t from = 0;
  for (auto nl = partial_.find('\n'); nl != std::string::npos; nl = partial_.find('\n', from)) {
    std::string_view line = std::string_view(partial_).substr(from, nl - from);
    append_log(mask_secrets(line, options_.secrets) + "\n");
    keep_line(line);
    from = nl + 1;
  }
  partial_.erase(0, from);
  if (partial_.size() > 4096) {
    std::size_t cut = safe_cut(partial_, partial_.size() - 512);
    append_log(mask_secrets(std::string_view(partial_).substr(0, cut), options_.secrets));
    partial_.erase(0, cut);
  }
}

// `at`, or the start of a secret that runs across it.
std::size_t Subprocess::safe_cut(std::string_view text, std::size_t at) const {
  for (bool moved = true; moved;) {
    moved = false;
    for (auto& s : options_.secrets) {
      auto p = text.find(s, at >= s.size() ? at - s.size() + 1 : 0);
      if (!s.empty() && p < at) {
        at = p;
        moved = true;
      }
    }
  }
  return at;
}

void Subprocess::keep_line(std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  last_lines_.emplace_back(line.substr(0, 300));  // escaped when one is shown
  if (last_lines_.size() > kKeptStderrLines) last_lines_.pop_front();
}

void Subprocess::open_log() {
  if (log_fd_ >= 0) ::close(log_fd_);
  log_fd_ = ::open(options_.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  struct stat st {};
  log_size_ = log_fd_ >= 0 && ::fstat(log_fd_, &st) == 0 ? static_cast<std::size_t>(st.st_size) : 0;
}

void Subprocess::append_log(std::string_view data) {
  if (log_fd_ < 0 || data.empty()) return;
  if (log_size_ + data.size() > kLogCap) {
    std::string old = options_.log_path + ".1";
    ::rename(options_.log_path.c_str(), old.c_str());
    open_log();
  }
  if (::write(log_fd_, data.data(), data.size()) > 0) log_size_ += data.size();
}

}  // namespace oppx::daemon
