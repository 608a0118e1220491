/* A failed fsync on purpose: preloaded (LD_PRELOAD) into a daemon under test, it makes fsync and
   fdatasync fail with EIO for every open file whose path contains $OPPX_FAIL_FSYNC_MATCH, and
   passes the others to the kernel. What a dying disk reports; no disk here can be made to. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int matches(int fd) {
  const char* match = getenv("OPPX_FAIL_FSYNC_MATCH");
  if (!match || !*match) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return strstr(path, match) != NULL;
}

int fsync(int fd) {
  if (matches(fd)) {
    errno = EIO;
    return -1;
  }
  return (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd) {
  if (matches(fd)) {
    errno = EIO;
    return -1;
  }
  return (int)syscall(SYS_fdatasync, fd);
}
