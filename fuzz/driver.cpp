// The fuzz targets' driver: one io_context per process, a socketpair per input, no threads.
#include "fuzz/driver.h"

#include "common/log.h"
#include "common/ndjson_transport.h"

#include <boost/asio/io_context.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace oppx::fuzz {

namespace {

std::string make_temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/oppx-fuzz-XXXXXX";
  if (!::mkdtemp(tmpl.data())) std::abort();
  std::string dir = tmpl;
  log::set_level(log::Level::kWarn);
  if (!log::open(dir + "/fuzz.log", false).empty()) std::abort();
  static std::string removed_at_exit;
  removed_at_exit = dir;
  std::atexit([] { (void)!std::system(("rm -rf '" + removed_at_exit + "'").c_str()); });
  return dir;
}

}  // namespace

const std::string& temp_dir() {
  static const std::string dir = make_temp_dir();
  return dir;
}

std::string drive_peer(std::string_view input, JsonRpcPeer::Options options,
                       const std::function<void(JsonRpcPeer&)>& before) {
  (void)temp_dir();
  static boost::asio::io_context io(1);
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0) std::abort();
  const int far = sv[1];
  auto peer = JsonRpcPeer::create(make_ndjson_transport(io, sv[0], sv[0]), std::move(options));
  peer->start();
  if (before) before(*peer);

  std::string wrote;
  std::size_t sent = 0;
  bool far_closed_writing = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buf[65536];
  for (;;) {
    if (sent < input.size()) {
      ssize_t n = ::write(far, input.data() + sent, input.size() - sent);
      if (n > 0) sent += static_cast<std::size_t>(n);
    } else if (!far_closed_writing) {
      ::shutdown(far, SHUT_WR);
      far_closed_writing = true;
    }
    io.restart();
    io.poll();
    if (peer && peer->closed()) peer.reset();  // its transport lets go once its operations end
    ssize_t n = ::read(far, buf, sizeof buf);
    if (n > 0) {
      wrote.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0 && !peer) break;  // the transport closed the socket
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "fuzz: the peer did not close within 10 s of the end of its input\n");
      std::abort();
    }
    if (n < 0 && errno == EAGAIN) io.run_one_for(std::chrono::milliseconds(1));
  }
  ::close(far);
  io.restart();
  io.poll();
  return wrote;
}

std::vector<std::string_view> complete_lines(std::string_view bytes) {
  std::vector<std::string_view> out;
  for (auto nl = bytes.find('\n'); nl != std::string_view::npos; nl = bytes.find('\n')) {
    out.push_back(bytes.substr(0, nl));
    bytes.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace oppx::fuzz
