// Test support implementation: posix_spawn with pipes, poll-based reading against deadlines.
#include "tests/support/harness.h"

#include "cli/daemon_client.h"
#include "proto/daemon_api.h"
#include "tests/support/sanitizer_reports.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <mutex>
#include <csignal>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <cstring>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

extern char** environ;

namespace oppx::test {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

TempHome::TempHome() {
  char tmpl[] = "/tmp/oppx-test-XXXXXX";
  if (!::mkdtemp(tmpl)) std::abort();
  root_ = tmpl;
  ::mkdir((root_ + "/run").c_str(), 0700);
  ::setenv("HOME", root_.c_str(), 1);
  ::setenv("XDG_RUNTIME_DIR", (root_ + "/run").c_str(), 1);
  ::setenv("XDG_STATE_HOME", (root_ + "/state").c_str(), 1);
  ::setenv("XDG_CONFIG_HOME", (root_ + "/config").c_str(), 1);
  ::setenv("XDG_CACHE_HOME", (root_ + "/cache").c_str(), 1);
  ::setenv("XDG_DATA_HOME", (root_ + "/data").c_str(), 1);
  ::unsetenv("OPPX_SOCKET");
  ::mkdir(sanitizer_dir().c_str(), 0700);
  send_sanitizer_reports_to(sanitizer_dir());
}

TempHome::~TempHome() {
  stop_daemon();
  if (std::string reports = sanitizer_reports(sanitizer_dir()); !reports.empty()) {
    ADD_FAILURE() << "sanitizer reports from the test's processes:\n" << reports;
  }
  // Folders a test made unreadable are opened up again so they can be removed.
  std::string cmd = "chmod -R u+rwx '" + root_ + "' 2>/dev/null; rm -rf '" + root_ + "'";
  (void)!std::system(cmd.c_str());
}

void TempHome::stop_daemon() const {
  auto pid = daemon_pid(socket());
  if (!pid) return;
  auto c = SyncClient::connect(socket());
  if (c) (void)c->call("daemon/shutdown", json::object{}, 5s);
  if (!cli::wait_for_exit(*pid, 30s)) {
    ADD_FAILURE() << "the test's oppxd (pid " << *pid << ") did not exit after daemon/shutdown";
    ::kill(static_cast<pid_t>(*pid), SIGKILL);
  }
}

std::optional<SyncClient> hello_client(const TempHome& home, const EnvPairs& extra) {
  if (!SyncClient::connect(home.socket())) {
    EXPECT_EQ(oppx({"daemon", "start"}).exit_code, 0);
  }
  return hello_client(home.socket(), extra);
}

void connectors_settled(const TempHome& home, const std::string& cwd) {
  auto c = hello_client(home);
  ASSERT_TRUE(c);
  auto r = c->call("mcp/list", json::object{{"wait", true}, {"cwd", cwd}}, 60s);
  ASSERT_TRUE(r) << r.error().message;
}

std::string TempHome::read_log() const { return read_file(log()); }

void TempHome::write_mcp_config(const std::string& servers) const {
  std::string dir = root_ + "/config/oppx";
  ::mkdir((root_ + "/config").c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  std::string path = dir + "/mcp.json";
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << R"({"mcpServers":{)" << servers << "}}";
  }
  ::chmod(tmp.c_str(), 0600);
  ::rename(tmp.c_str(), path.c_str());
}

std::string stdio_entry(const std::string& name, const std::string& command, const std::vector<std::string>& args,
                        const std::vector<std::pair<std::string, std::string>>& env) {
  json::array a;
  for (auto& s : args) a.emplace_back(s);
  json::object o{{"command", command}, {"args", a}};
  if (!env.empty()) {
    json::object e;
    for (auto& [k, v] : env) e[k] = v;
    o["env"] = std::move(e);
  }
  return json::serialize(json::string(name)) + ":" + json::serialize(o);
}

Process::Process(std::vector<std::string> argv) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) std::abort();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  int rc = ::posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  if (rc != 0) {
    pid_ = -1;
    err_ = "spawn failed: " + std::string(std::strerror(rc));
  }
}

Process::Process(Process&& o) noexcept
    : pid_(o.pid_),
      out_fd_(o.out_fd_),
      err_fd_(o.err_fd_),
      out_(std::move(o.out_)),
      err_(std::move(o.err_)),
      reaped_(o.reaped_),
      status_(o.status_) {
  o.pid_ = -1;
  o.out_fd_ = o.err_fd_ = -1;
}

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

void Process::pump(int timeout_ms) {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  if (::poll(fds, 2, timeout_ms) <= 0) return;
  char buf[65536];
  for (int i = 0; i < 2; ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
    ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
    if (n > 0) {
      (i == 0 ? out_ : err_).append(buf, static_cast<std::size_t>(n));
    } else {
      ::close(fds[i].fd);
      (i == 0 ? out_fd_ : err_fd_) = -1;
    }
  }
}

Result Process::wait(std::chrono::milliseconds timeout) {
  Result r;
  if (pid_ <= 0) {
    r.err = err_;
    return r;
  }
  auto deadline = Clock::now() + timeout;
  // Output first: a child writing more than a pipe holds would otherwise never exit.
  while ((out_fd_ >= 0 || err_fd_ >= 0) && Clock::now() < deadline) {
    pump(static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
  }
  if (!reaped_) {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{pidfd, POLLIN, 0};
    if (pidfd >= 0 && left > 0) ::poll(&p, 1, static_cast<int>(left));
    if (pidfd >= 0) ::close(pidfd);
    if (::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  }
  r.out = out_;
  r.err = err_;
  if (reaped_) r.exit_code = WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  return r;
}

bool Process::wait_for_stderr(const std::string& text, std::chrono::milliseconds timeout) {
  return wait_for(err_, err_fd_, text, timeout);
}

bool Process::wait_for_stdout(const std::string& text, std::chrono::milliseconds timeout) {
  return wait_for(out_, out_fd_, text, timeout);
}

bool Process::wait_for_stdout_after(std::size_t from, const std::string& text, std::chrono::milliseconds timeout) {
  return wait_for(out_, out_fd_, text, timeout, from);
}

bool Process::wait_for(const std::string& stream, const int& fd, const std::string& text,
                       std::chrono::milliseconds timeout, std::size_t from) {
  auto deadline = Clock::now() + timeout;
  while (stream.size() < from || stream.find(text, from) == std::string::npos) {
    if (fd < 0 || Clock::now() >= deadline) return false;
    pump(static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
  }
  return true;
}

Result run(std::vector<std::string> argv, std::chrono::milliseconds timeout) {
  Process p(std::move(argv));
  return p.wait(timeout);
}

Result oppx(std::vector<std::string> args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv{std::string(OPPX_BIN)};
  argv.insert(argv.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  return run(std::move(argv), timeout);
}

json::value status_of(const std::string& socket) {
  auto c = SyncClient::connect(socket);
  if (!c) {
    ADD_FAILURE() << c.error().message;
    return nullptr;
  }
  auto r = c->call("daemon/status", json::object{}, 5s);
  if (!r) {
    ADD_FAILURE() << r.error().message;
    return nullptr;
  }
  return *r;
}

std::optional<std::int64_t> daemon_pid(const std::string& socket) {
  auto c = SyncClient::connect(socket);
  if (!c) return std::nullopt;
  auto r = c->call("daemon/status", json::object{}, 5s);
  if (!r) return std::nullopt;
  return r->as_object().at("pid").as_int64();
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::optional<SyncClient> hello_client(const std::string& socket, const EnvPairs& extra) {
  auto c = SyncClient::connect(socket);
  if (!c) {
    ADD_FAILURE() << c.error().message;
    return std::nullopt;
  }
  json::object env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (auto& [k, v] : extra) env[k] = v;
  auto r = c->call("hello", json::object{{"protocol", proto::kProtocolVersion}, {"env", env}}, 5s);
  if (!r) {
    ADD_FAILURE() << r.error().message;
    return std::nullopt;
  }
  return std::move(*c);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Its state letter in /proc (R, S, T, Z…); 0 when there is no such process.
static char process_state(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  if (!std::getline(f, content)) return 0;
  auto close = content.rfind(')');
  return close != std::string::npos && close + 2 < content.size() ? content[close + 2] : 0;
}

bool process_alive(pid_t pid) {
  char state = process_state(pid);  // a zombie is not alive
  return state != 0 && state != 'Z';
}

bool process_stopped(pid_t pid) { return process_state(pid) == 'T'; }

namespace {

// Calls `fd` with each descriptor's number as /proc/<pid>/fd names it; false when there is no such
// process.
bool each_fd(pid_t pid, const std::function<void(const std::string& dir, const char* name)>& fd) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') fd(dir, e->d_name);
  }
  ::closedir(d);
  return true;
}

}  // namespace

int open_fds(pid_t pid) {
  int n = 0;
  return each_fd(pid, [&](const std::string&, const char*) { ++n; }) ? n : -1;
}

std::string fd_targets(pid_t pid) {
  std::vector<std::pair<int, std::string>> fds;
  bool found = each_fd(pid, [&](const std::string& dir, const char* name) {
    char target[PATH_MAX];
    ssize_t n = ::readlink((dir + "/" + name).c_str(), target, sizeof target - 1);
    fds.emplace_back(std::atoi(name), n < 0 ? std::string("?") : std::string(target, static_cast<std::size_t>(n)));
  });
  if (!found) return "(no such process)";
  std::sort(fds.begin(), fds.end());
  std::string out;
  for (auto& [fd, target] : fds) out += (out.empty() ? "" : ", ") + std::to_string(fd) + " " + target;
  return out;
}

LocalhostCert localhost_cert(const std::string& dir) {
  LocalhostCert c{dir + "/cert.pem", dir + "/key.pem", {}};
  c.made = run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", c.key, "-out", c.cert, "-days",
                "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"});
  return c;
}

InRepository::InRepository(const TempHome& home) : root_(home.root() + "/repo") {
  ::mkdir(root_.c_str(), 0700);
  ::mkdir((root_ + "/.git").c_str(), 0700);
  char buf[4096];
  if (::getcwd(buf, sizeof buf)) before_ = buf;
  EXPECT_EQ(::chdir(root_.c_str()), 0) << root_;
}

InRepository::~InRepository() {
  if (!before_.empty()) (void)!::chdir(before_.c_str());
}

DaemonProcess::DaemonProcess(const TempHome& home, const std::string& shell_prefix) : home_(home) {
  if (shell_prefix.empty()) {
    start_ = run({OPPXD_BIN, "--socket", home.socket()});
  } else {
    start_ = run({"sh", "-c", shell_prefix + " exec \"$0\" --socket \"$1\"", OPPXD_BIN, home.socket()});
  }
  if (auto pid = daemon_pid(home.socket())) pid_ = *pid;
}

DaemonProcess::~DaemonProcess() {
  if (pid_ <= 0 || !process_alive(static_cast<pid_t>(pid_))) return;
  ::kill(static_cast<pid_t>(pid_), SIGTERM);
  if (!cli::wait_for_exit(pid_, 10s)) ::kill(static_cast<pid_t>(pid_), SIGKILL);
}

ForegroundDaemon::ForegroundDaemon(const TempHome& home) : output_(home.root() + "/oppxd-foreground.out") {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, output_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::string bin = OPPXD_BIN, socket = home.socket();
  std::vector<char*> argv{bin.data(), const_cast<char*>("--foreground"), const_cast<char*>("--socket"), socket.data(),
                          nullptr};
  int rc = ::posix_spawn(&pid_, bin.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = -1;
    ADD_FAILURE() << "cannot start " << bin << ": " << std::strerror(rc);
    return;
  }
  ready_ = when_file_changes(output_, [&] { return read_file(output_).find("oppxd: ready on") != std::string::npos; });
  EXPECT_TRUE(ready_) << "oppxd --foreground did not say it was ready:\n" << read_file(output_);
}

ForegroundDaemon::~ForegroundDaemon() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  if (!wait_for_exit(pid_, 10s)) ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::string kill_daemon_mid_writes(SyncClient client, pid_t pid, int writes, const WriteCall& write) {
  std::mutex m;
  std::condition_variable cv;
  int done = 0;
  bool ended = false;
  std::atomic<bool> stop{false};
  std::string last_error;
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      std::string e = write(client, i);
      std::lock_guard l(m);
      if (!e.empty()) {
        last_error = e;
        ended = true;
        cv.notify_all();
        break;
      }
      ++done;
      cv.notify_all();
    }
  });
  bool wrote = false;
  {
    std::unique_lock l(m);
    cv.wait_for(l, 20s, [&] { return done > writes || ended; });
    wrote = done > writes;
  }
  ::kill(pid, SIGKILL);
  stop = true;
  writer.join();
  return wrote ? "" : "fewer writes than asked before the kill: " + last_error;
}

}  // namespace oppx::test
