// escape_terminal_output: glibc's fopencookie gives a FILE whose writes call ours; stdout and
// stderr are plain variables in glibc, so fmt::print and fwrite reach the filter unchanged.
// Unbuffered: each print arrives whole, so a UTF-8 sequence is never split between two writes.
#include "cli/output.h"

#include "common/text.h"
#include "proto/jsonrpc.h"

#include <cerrno>
#include <cstdio>
#include <unistd.h>

namespace oppx::cli {

namespace {

ssize_t write_escaped(void* cookie, const char* data, std::size_t size) {
  int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(cookie));
  std::string text = escape_controls(std::string_view(data, size), true);
  for (std::size_t off = 0; off < text.size();) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    off += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(size);
}

std::FILE* escaping_stream(int fd) {
  cookie_io_functions_t io{};
  io.write = write_escaped;
  std::FILE* f = ::fopencookie(reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)), "w", io);
  if (f) std::setvbuf(f, nullptr, _IONBF, 0);
  return f;
}

}  // namespace

bool escape_terminal_output() {
  std::FILE* out = escaping_stream(STDOUT_FILENO);
  std::FILE* err = escaping_stream(STDERR_FILENO);
  if (!out || !err) return false;
  std::fflush(stdout);
  std::fflush(stderr);
  stdout = out;
  stderr = err;
  return true;
}

std::string json_line(const boost::json::value& v) { return json_escape_controls(proto::json_text(v)) + "\n"; }

}  // namespace oppx::cli
