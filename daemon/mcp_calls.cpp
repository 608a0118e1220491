// tools/call: its rounds, its cancel, and what a server asks of the client while it runs. On 2025-11-25 it sends
// requests of its own (elicitation/create; roots/list is answered in mcp_client.cpp); such a request says nothing of
// the call it serves, so it goes to the newest open call that can ask. On 2026-07-28 the call's
// result asks instead (resultType "input_required", MCP "Multi Round-Trip Requests"): each of its
// inputRequests is fulfilled and the call is sent again, under a new id, with the inputResponses
// and the requestState exactly as the server wrote it; the next call carries nothing of it.
#include "daemon/mcp_client.h"

#include "common/log.h"
#include "common/text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

namespace oppx::daemon {

namespace json = boost::json;
using proto::ErrorCode;
using proto::RpcError;

namespace {

constexpr int kMaxInputRounds = 8;  // a server that asks again and again ends the call

json::object declined() { return json::object{{"action", "decline"}}; }

McpClient::CallResult call_error(std::string message) {
  return McpClient::CallResult(boost::system::in_place_error,
                               RpcError::make(ErrorCode::kInternal, "unsupported", std::move(message)));
}

}  // namespace

struct McpClient::ToolCall {
  json::object params;  // name, arguments, _meta: what every round sends, before its own fields
  std::string token;    // the progress token, "" for none
  RequestOptions request;
  std::function<void(CallResult)> done;
  Elicit on_elicit;
  std::string key;      // proto::id_key of the first id: the call's key in calls_
  json::value current;  // the id of the round in flight
  std::uint64_t order = 0;
  int rounds = 0;
  bool ended = false;
};

json::object McpClient::roots_result() const {
  json::array roots;
  for (const auto& folder : options_.roots())
    roots.push_back(json::object{{"uri", file_uri(folder)}, {"name", folder.substr(folder.rfind('/') + 1)}});
  return json::object{{"roots", std::move(roots)}};
}

std::function<void(McpClient::CallResult)> McpClient::take_call(const std::shared_ptr<ToolCall>& call) {
  call->ended = true;
  if (!call->token.empty()) progress_.erase(call->token);
  calls_.erase(call->key);
  return std::move(call->done);
}

json::object McpClient::client_capabilities() const {
  json::object caps{{"elicitation", json::object{{"form", json::object{}}, {"url", json::object{}}}}};
  if (options_.roots) caps["roots"] = json::object{};
  return caps;
}

json::value McpClient::call_tool(const std::string& tool, const json::value& arguments, bool read_only,
                                 std::function<void(const json::object&)> on_progress,
                                 std::function<void(CallResult)> done, Elicit on_elicit) {
  auto call = std::make_shared<ToolCall>();
  call->done = std::move(done);
  call->on_elicit = std::move(on_elicit);
  call->order = ++next_call_;
  json::object params{{"name", tool}, {"arguments", arguments}};
  if (on_progress) {
    call->token = fmt::format("oppx-{}", ++next_progress_);
    params["_meta"] = json::object{{"progressToken", call->token}};
    progress_.emplace(call->token, std::move(on_progress));
  }
  // A tool may work long before it answers; a call is safe to send twice only when it is read-only.
  call->request.repeatable = read_only;
  call->request.slow_first_byte = true;
  call->request.label = "the call to " + escape_controls(std::string_view(tool).substr(0, 100));
  if (auto it = param_headers_.find(tool); it != param_headers_.end())
    call->request.headers = mcp_headers::param_header_values(it->second, arguments);
  call->params = params;
  send_call(call, std::move(params));
  json::value first = call->current;
  // Unless it already ended (a transport that could not take it answers at once).
  if (!call->ended) {
    call->key = proto::id_key(first);
    calls_[call->key] = call;
  }
  return first;
}

void McpClient::cancel(const json::value& id, std::string_view why) {
  if (!peer_ || id.is_null()) return;
  json::value current = id;
  if (auto it = calls_.find(proto::id_key(id)); it != calls_.end()) {
    auto call = it->second;
    take_call(call);  // its `done` never runs
    current = call->current;
  }
  peer_->forget(current);
  peer_->notify("notifications/cancelled", json::object{{"requestId", current}, {"reason", why}}, current);
}

void McpClient::send_call(std::shared_ptr<ToolCall> call, json::object params) {
  auto answered = [w = weak_from_this(), call](CallResult r) {
    if (auto self = w.lock(); self && !call->ended) self->call_answered(call, std::move(r));
  };
  call->current = peer_->call("tools/call", stamped(std::move(params)), std::move(answered), call->request);
}

void McpClient::call_answered(std::shared_ptr<ToolCall> call, CallResult r) {
  move_server_kind_to_data(r);
  const json::value* kind = r && r->is_object() ? r->as_object().if_contains("resultType") : nullptr;
  if (kind && kind->is_string() && kind->as_string() == "input_required" && phase_ != Phase::kClosed)
    return fulfil(call, r->as_object());
  if (kind && kind->is_string() && kind->as_string() != "complete") {
    r =
        call_error(fmt::format("the server answered with resultType \"{}\", which oppx does not know; the tool "
                               "did not complete",
                               escape_controls(std::string_view(kind->as_string()).substr(0, 40))));
  }
  auto done = take_call(call);
  done(std::move(r));
}

// One round: every input request answered (the user asked through on_elicit, roots from the
// owner's folders), then the call again with the answers and the state.
void McpClient::fulfil(std::shared_ptr<ToolCall> call, const json::object& result) {
  auto end = [this, call](std::string why) {
    auto done = take_call(call);
    done(call_error(std::move(why)));
  };
  if (++call->rounds > kMaxInputRounds)
    return end(fmt::format("the server asked for more input {} times; oppx stopped the call there", kMaxInputRounds));
  struct Round {
    json::object responses;
    std::size_t waiting = 1;  // one for the loop below, so that answers given at once cannot finish it early
  };
  auto round = std::make_shared<Round>();
  std::optional<json::value> state;
  if (const json::value* s = result.if_contains("requestState")) state = *s;
  auto go_on = [w = weak_from_this(), call, round, state] {
    if (--round->waiting != 0) return;
    auto self = w.lock();
    if (!self || call->ended || self->phase_ == Phase::kClosed) return;
    json::object params = call->params;
    if (!round->responses.empty()) params["inputResponses"] = std::move(round->responses);
    if (state) params["requestState"] = *state;
    self->send_call(call, std::move(params));
  };
  const json::value* asked = result.if_contains("inputRequests");
  if (asked && asked->is_object()) {
    for (const auto& [key, request] : asked->as_object()) {
      const json::object* req = request.is_object() ? &request.as_object() : nullptr;
      const json::value* method = req ? req->if_contains("method") : nullptr;
      const json::value* params = req ? req->if_contains("params") : nullptr;
      std::string name = method && method->is_string() ? std::string(method->as_string()) : std::string();
      json::object p = params && params->is_object() ? params->as_object() : json::object{};
      if (name == "roots/list" && options_.roots) {
        round->responses[key] = roots_result();
      } else if (name == "elicitation/create") {
        ++round->waiting;
        std::string k(key);
        auto answer = [round, k, go_on](json::object a) {
          round->responses[k] = std::move(a);
          go_on();
        };
        if (call->on_elicit) {
          call->on_elicit(p, std::move(answer));
        } else {
          answer(declined());
        }
      } else {
        return end(fmt::format("the server asked for {}, which oppx does not offer; the tool did not complete",
                               name.empty() ? "an input it did not name" : escape_controls(name.substr(0, 60))));
      }
    }
  }
  go_on();
}

void McpClient::elicit_for_server(proto::Request req, Reply reply) {
  std::shared_ptr<ToolCall> newest;
  for (const auto& [key, call] : calls_)
    if (call->on_elicit && (!newest || call->order > newest->order)) newest = call;
  if (!newest) {
    log::info("connector {}: it asked the user something with no call of a session open; declined", options_.name);
    return reply.ok(declined());
  }
  json::object params = req.params.is_object() ? req.params.as_object() : json::object{};
  auto shared = std::make_shared<Reply>(std::move(reply));
  newest->on_elicit(params, [shared](json::object answer) { shared->ok(std::move(answer)); });
}

}  // namespace oppx::daemon
