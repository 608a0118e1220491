// oppx_test_peer: connects to a Unix socket, sends argv[2] plus a newline, and prints whatever
// comes back until the peer closes or 5 s pass. Exit 0 on a close, 1 on timeout, 2 on failure
// to connect. The uid test runs it as another user.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    std::fprintf(stderr, "connect: %s\n", std::strerror(errno));
    return 2;
  }
  std::string line = std::string(argv[2]) + "\n";
  (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return 1;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return 0;
    std::fwrite(buf, 1, static_cast<std::size_t>(n), stdout);
  }
}
