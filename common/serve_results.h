// What `oppx mcp serve` reads in its MCP client's requests and answers it, in MCP's shapes: a tool's result made from
// the daemon's, the permission question as an elicitation form and its answer read back, and what a result or
// notification of MCP 2026-07-28 must carry besides (resultType, the server's name, freshness, the stream it belongs
// to). common/mcp_serve.cpp decides when each is sent.
#pragma once

#include "proto/jsonrpc.h"

#include <boost/json/fwd.hpp>

#include <string>
#include <string_view>

namespace oppx::serve {

// What a request says of its client in its _meta. A request of MCP 2026-07-28 names its version
// or its client's capabilities there (its results must then say that they are complete); those
// capabilities may show forms, which such a client is shown in a result (input_required). An
// elicitation capability `shows` a mode when it names it (an empty one: the form mode alone, as
// 2025-06-18 meant). The progressToken is null when none was asked for.
bool is_modern(const boost::json::value& params);
const boost::json::value* modern_capabilities(const boost::json::value& params);
bool modern_shows_forms(const boost::json::value& params);
bool shows(const boost::json::value& capabilities, std::string_view mode);
boost::json::value progress_token_of(const boost::json::value& params);

// A tool's result of one text part.
boost::json::object text_result(std::string text, bool is_error);
// A daemon's error as the tool's failed result, with its steps, so that the client's model and
// user read why and what to do.
boost::json::object error_result(const proto::RpcError& e);
// The daemon's tools/call result in MCP's form: its text (secrets hidden, binary parts described,
// cut with a marker naming the file of the whole), and its structuredContent when it fit the schema.
boost::json::object call_result(const boost::json::value& daemon_result);

// The daemon's permissions/ask as an elicitation form (requested of a 2025-11-25 client, or carried
// by an input_required result to a 2026-07-28 one): the rule, why, the arguments (cut at 2000
// bytes), and the choices yes, session, always and no.
boost::json::object permission_form(const boost::json::value& ask);
// The daemon's answer ({"answer": …}) from the client's elicitation result (null: none came):
// "no" unless it accepted with one of the form's choices.
boost::json::object permission_answer(const boost::json::value* result);

// MCP 2026-07-28's result that asks first: the form under `key` among its inputRequests, and the
// state the client sends back with its answer.
boost::json::object input_required(std::string_view key, boost::json::object form, std::string state);
// A result to a request of 2026-07-28 (`modern`) says it is complete and names the server; one
// to an older request is left as it is.
boost::json::object complete(boost::json::object result, bool modern);
// A listing of 2026-07-28 also says how long it stays fresh: not at all (list_changed says when it
// changed), and for this user only (their rules decide it).
boost::json::object fresh_now(boost::json::object result, bool modern);
boost::json::object server_info();
// A notification's params on the subscriptions/listen stream of request `listen_id`.
boost::json::object on_stream(boost::json::object params, const boost::json::value& listen_id);

}  // namespace oppx::serve
