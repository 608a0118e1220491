// The environment each shared connector runs with. A client's environment (from hello) starts
// it; a variable its definition reads that this client lacks keeps the value of the last start;
// a client whose value of such a variable differs restarts it, but only once no call is open on
// it. Values are kept only as hashes. Owned by Connectors; on the daemon's loop.
#pragma once

#include "daemon/connector.h"
#include "daemon/mcp_config.h"

#include <chrono>
#include <map>
#include <optional>
#include <string>

namespace oppx::daemon {

class ConnectorEnv {
 public:
  // Whether a request may restart a connector whose variable has another value in its
  // environment: a read-only one (list, get, tools) never does.
  enum class Restart { kMay, kNever };

  // Starts `c` with the asking client's environment `asked`, a variable it lacks (or has no
  // usable value for) taken from the connector's last start.
  void start(Connector& c, const EnvMap& asked, std::chrono::milliseconds timeout);
  // Restarts `c` when `env` sets a variable its definition reads to another value than the one
  // it started with: now, or once its open calls ended (restart_waits until then). With kNever,
  // only a connector that neither runs nor starts. One waiting for consent is never started.
  void restart_if_changed(Connector& c, const EnvMap& env, Restart restart);
  // The last open call of `c` ended: the restart that waited for it, if any. True when one waited.
  bool idle(Connector& c);
  bool restart_waits(const Connector& c) const;  // a restart waits for its open calls
  void forget(const Connector& c);               // it was removed

 private:
  // The first variable the definition reads that `env` sets to another value than at start.
  std::string changed_variable(const Connector& c, const EnvMap& env) const;

  struct Started {
    std::map<std::string, std::string> env;  // the variables it started with: "unset" or "set <hash>"
    std::optional<EnvMap> restart_env;       // the environment it restarts with once idle
    std::string restart_variable;            // the variable that changed (its name only)
  };
  std::map<const Connector*, Started> started_;
};

}  // namespace oppx::daemon
