// Handlers of browser/status, browser/start and browser/stop (docs/protocol.md): the session's
// browser, started and stopped. The other methods reach it as the session's connector `playwright`
// through ConnectorLookup (daemon/connector_scope.h), never as a shared one.
#pragma once

#include "daemon/router.h"
#include "proto/decode.h"

namespace oppx::daemon {

class Server;

void browser_status(Server& s, const proto::NoParams& p, Reply reply, Client& client);
void browser_start(Server& s, const proto::NoParams& p, Reply reply, Client& client);
void browser_stop(Server& s, const proto::NoParams& p, Reply reply, Client& client);

}  // namespace oppx::daemon
