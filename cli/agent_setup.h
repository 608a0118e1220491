// What `oppx -p` and the terminal chat share around the agent loop: the environment the model
// configuration is read from, a model server's error with its steps, the lines said at start
// (connectors not offered, a heavy tool list), and the browser started with the session when on.
#pragma once

#include "chat/agent.h"

#include <map>
#include <string>
#include <vector>

namespace oppx::cli {

std::map<std::string, std::string> environment();
// The error and its numbered steps, on stderr.
void print_model_error(const chat::ModelError& e);
// A repository's connectors waiting for consent (with the approve line), and those not running.
void tell_not_offered(const chat::Agent& agent);
void tell_not_offered(const std::vector<chat::ConnectorNote>& notes);
// The SMALL_CONTEXT / HEAVY_SHARE warnings for the whole tool list; `only_heavy` at start (a
// small window alone would repeat every session), both after a change of the list.
void warn_cost(const chat::Agent& agent, bool only_heavy);
// With `oppx browser on` (browser_auto), the session's browser, before the tools are listed and
// the first request is made: installed when it is not, then browser/start. "" when it is off or
// it started, else why it did not (the session goes on without it).
std::string start_browser_if_on(chat::DaemonTools& daemon);

}  // namespace oppx::cli
