// Fuzz target: what an MCP server writes on its stdout, read by the daemon's side of the link: the
// NDJSON transport and the JSON-RPC peer as a client (malformed lines logged and skipped, server
// requests refused) with initialize, tools/list and tools/call in flight, and the tool list
// decoded to text (common/tool_text). Property: each call completes exactly once, and what the
// daemon writes back is only requests and responses.
#include "common/tool_text.h"
#include "fuzz/driver.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>

namespace {

using namespace oppx;
namespace json = boost::json;

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "mcp_message: %s\n", what);
  std::abort();
}

void read_tools(const json::value& result) {
  const json::object* o = result.if_object();
  const json::value* tools = o ? o->if_contains("tools") : nullptr;
  if (!tools || !tools->is_array()) return;
  std::string text = tool_list_text("fuzz", tools->as_array());
  (void)estimate_tokens(text);
  for (const json::value& t : tools->as_array()) {
    if (t.is_object()) (void)tool_line("fuzz", t.as_object());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  int completed[3] = {0, 0, 0};
  JsonRpcPeer::Options o;
  o.name = "mcp:fuzz";
  o.reply_to_malformed = false;
  o.on_request = [](proto::Request req, Reply reply) {
    reply.fail(proto::RpcError::make(proto::ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                     "oppx does not offer " + req.method));
  };
  o.on_notification = [](proto::Notification) {};
  std::string wrote = fuzz::drive_peer(input, std::move(o), [&](JsonRpcPeer& peer) {
    peer.call("initialize", json::object{{"protocolVersion", "2025-06-18"}},
              [&](JsonRpcPeer::CallResult) { ++completed[0]; });
    peer.call("tools/list", json::object{}, [&](JsonRpcPeer::CallResult r) {
      ++completed[1];
      if (r) read_tools(*r);
    });
    peer.call("tools/call", json::object{{"name", "echo"}}, [&](JsonRpcPeer::CallResult r) {
      ++completed[2];
      if (r) (void)tool_list_text("fuzz", r->is_array() ? r->as_array() : json::array{});
    });
  });
  for (int c : completed) {
    if (c != 1) broken("a call did not complete exactly once");
  }
  for (auto line : fuzz::complete_lines(wrote)) {
    auto m = proto::parse_message(line);
    if (!m || std::holds_alternative<proto::Notification>(*m)) broken("the daemon wrote something else");
  }
  return 0;
}
