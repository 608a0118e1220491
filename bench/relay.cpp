// Relay: a forked process running a blocking poll(2) loop; see relay.h.
#include "bench/relay.h"

#include "bench/bench_support.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace oppx::bench {

namespace {

bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Reads up to a newline (the handshake only: byte by byte is fine for one line).
bool read_line(int fd, std::string& line) {
  char ch;
  while (::read(fd, &ch, 1) == 1) {
    if (ch == '\n') return true;
    line.push_back(ch);
  }
  return false;
}

}  // namespace

std::string Relay::start(const std::string& socket_path, const std::vector<std::string>& args) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  std::vector<char*> argv = c_argv(args);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  int rc = ::posix_spawnp(&child_, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  to_child_ = in[1];
  from_child_ = out[0];
  if (rc != 0) {
    child_ = -1;
    return "cannot start " + args[0] + ": " + std::strerror(rc);
  }
  // The same handshake a connector does, so the child is as warm as the daemon's.
  std::string init =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
      R"("clientInfo":{"name":"relay","version":"0"}}})"
      "\n";
  std::string initialized = R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                            "\n";
  std::string reply;
  if (!write_all(to_child_, init.data(), init.size()) || !read_line(from_child_, reply) ||
      !write_all(to_child_, initialized.data(), initialized.size()))
    return args[0] + " did not answer initialize";

  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return "the socket path is too long: " + socket_path;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 1) != 0)
    return "cannot listen on " + socket_path + ": " + std::strerror(errno);
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  // Forked before the benchmark starts any thread; the relay only makes system calls.
  relay_ = ::fork();
  if (relay_ < 0) return std::string("fork: ") + std::strerror(errno);
  if (relay_ == 0) {
    ::close(stop_pipe_[1]);
    pump();
    ::_exit(0);
  }
  return "";
}

void Relay::pump() {
  pollfd a[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
  if (::poll(a, 2, -1) <= 0 || (a[1].revents & POLLIN)) return;
  int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (client < 0) return;
  char buf[64 * 1024];
  for (;;) {
    pollfd p[3] = {{client, POLLIN, 0}, {from_child_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    if (::poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[2].revents) break;
    if (p[0].revents) {
      ssize_t n = ::read(client, buf, sizeof buf);
      if (n <= 0 || !write_all(to_child_, buf, static_cast<std::size_t>(n))) break;
    }
    if (p[1].revents) {
      ssize_t n = ::read(from_child_, buf, sizeof buf);
      if (n <= 0 || !write_all(client, buf, static_cast<std::size_t>(n))) break;
    }
  }
  ::close(client);
}

Relay::~Relay() {
  if (stop_pipe_[1] >= 0) (void)!::write(stop_pipe_[1], "x", 1);
  if (relay_ > 0) ::waitpid(relay_, nullptr, 0);
  for (int fd : {listen_fd_, to_child_, from_child_, stop_pipe_[0], stop_pipe_[1]}) {
    if (fd >= 0) ::close(fd);
  }
  if (child_ > 0) {
    ::kill(child_, SIGTERM);  // its stdin is closed already: it is ending anyway
    ::waitpid(child_, nullptr, 0);
  }
}

}  // namespace oppx::bench
