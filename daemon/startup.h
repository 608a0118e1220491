// Getting a socket to serve on, safely: the folder checked, the per-socket lock taken (one
// daemon per socket), a stale socket replaced and a live one never, the listening socket put in
// place atomically (bound under a temporary name, then renamed), so a client never sees a socket
// that refuses connections. Plain POSIX, called before the event loop exists.
#pragma once

#include <boost/system/result.hpp>

#include <chrono>
#include <string>
#include <sys/types.h>

namespace oppx::daemon {

// oppxd's exit codes (docs/protocol.md, "Starting the daemon").
enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,
  kExitUsage = 2,
  kExitUnsafePath = 3,
  kExitAlreadyRunning = 4,
};

struct StartupError {
  int exit_code = kExitFailed;
  std::string message;
};

struct BoundSocket {
  int fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
  bool passed = false;  // bound by systemd (socket_activation.h): the daemon never unlinks it
};

struct Listener {
  BoundSocket socket;
  int lock_fd = -1;
};

// Everything above. `lock_wait` is how long to wait for a daemon that holds the lock but no
// longer answers (it is shutting down) to let go of it.
boost::system::result<Listener, StartupError> acquire_socket(const std::string& socket_path,
                                                             std::chrono::milliseconds lock_wait);

// Opens `<socket>.lock` and takes it, waiting up to `lock_wait` for a daemon that holds it but is
// on its way out; with `answering_means_taken`, a socket that answers means another daemon serves
// it and there is no wait. Writes our pid into it once taken; returns its descriptor.
boost::system::result<int, StartupError> take_lock(const std::string& socket_path, std::chrono::milliseconds lock_wait,
                                                   bool answering_means_taken);

// Binds and listens on `socket_path` through a temporary name and a rename.
boost::system::result<BoundSocket, std::string> bind_listener(const std::string& socket_path);

// True when something accepts connections on the path.
bool socket_answers(const std::string& socket_path);

// True when `socket_path` is still the socket we bound (same device and inode).
bool socket_is_ours(const std::string& socket_path, const BoundSocket& s);

}  // namespace oppx::daemon
