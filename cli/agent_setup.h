// What `oppx -p` and the terminal chat share around the daemon's agent: the environment, a model
// server's error with its steps, and the connectors not offered, said at start.
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
void tell_not_offered(const std::vector<chat::ConnectorNote>& notes);

}  // namespace oppx::cli
