// `oppx daemon install-service`: the systemd user units of packaging/systemd (built into oppx),
// written with ExecStart set to the oppxd beside this oppx, then enabled with systemctl.
#pragma once

#include "cli/commands.h"

#include <string>
#include <vector>

namespace oppx::cli {

// The two units' text as written: oppxd.socket unchanged, oppxd.service with ExecStart=`oppxd`
// (quoted as systemd reads it). Empty with `error` set when the path cannot be written in a unit.
struct ServiceUnits {
  std::string socket, service, error;
};
ServiceUnits service_units(const std::string& oppxd);

// Stops the daemon on `socket` and waits for its exit (cmd_daemon.cpp); an exit code.
int stop_daemon(const std::string& socket, bool quiet_if_absent);

}  // namespace oppx::cli
