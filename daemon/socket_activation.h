// Socket activation: a listening socket handed over by systemd (sd_listen_fds(3)'s protocol,
// read from the environment without libsystemd), checked and adopted instead of one of our own.
// Plain POSIX, called before the event loop exists; the lock is taken as startup.h takes it, so
// a socket-activated oppxd is still the one daemon of its socket.
#pragma once

#include "daemon/startup.h"

#include <boost/system/result.hpp>

#include <chrono>
#include <string>

namespace oppx::daemon {

// SD_LISTEN_FDS_START: the first descriptor passed.
constexpr int kPassedFd = 3;

// The socket passed to this process (kPassedFd, now close-on-exec) when LISTEN_PID is our pid and
// LISTEN_FDS at least 1, else -1. LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are removed from the
// environment whatever they said, so no child (a connector) inherits them. Call first in main,
// before any descriptor is opened or closed.
int take_passed_socket();

// "" when `fd` is a listening AF_UNIX stream socket bound to `socket_path`, else why not.
std::string check_passed_socket(int fd, const std::string& socket_path);

// acquire_socket for a passed socket: the folder rules, the socket checked, the lock taken (waiting
// up to `lock_wait` for a daemon on its way out). It never binds, and the daemon never unlinks it.
boost::system::result<Listener, StartupError> adopt_passed_socket(int fd, const std::string& socket_path,
                                                                  std::chrono::milliseconds lock_wait);

}  // namespace oppx::daemon
