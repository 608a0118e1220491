/* bench/stdio_relay: the floor of any process between an MCP client and its server on stdio. It
 * starts the command given as its arguments on pipes and copies bytes as they come, stdin to the
 * child and the child's stdout to stdout (no framing, no JSON), until either side ends. bench/
 * mcp_serve puts it where `oppx mcp serve` would be: what a call costs through it is what one
 * more process costs on this machine, before any work.
 *   usage: bench_stdio_relay command [args...] */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

/* Writes all of buf to fd; 0 on success. */
static int write_all(int fd, const char* buf, ssize_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, (size_t)n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    buf += w;
    n -= w;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_stdio_relay command [args...]\n");
    return 2;
  }
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return perror("bench_stdio_relay: pipe"), 1;
  signal(SIGPIPE, SIG_IGN);
  pid_t pid = fork();
  if (pid < 0) return perror("bench_stdio_relay: fork"), 1;
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[0]);
    close(to_child[1]);
    close(from_child[0]);
    close(from_child[1]);
    execvp(argv[1], argv + 1);
    perror("bench_stdio_relay: exec");
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  struct pollfd fds[2] = {{0, POLLIN, 0}, {from_child[0], POLLIN, 0}};
  const int out[2] = {to_child[1], 1};
  char buf[65536];
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    int ended = 0;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || write_all(out[i], buf, n) != 0) ended = 1;
    }
    if (ended) break;
  }
  close(to_child[1]); /* the child sees its stdin end */
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
