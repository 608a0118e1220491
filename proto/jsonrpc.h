// JSON-RPC 2.0 envelopes as oppx speaks them on every wire: one message per line, ids that are
// strings or integers, errors that carry a machine-readable data.kind. Pure functions, no I/O.
// Parsing never throws; it returns the message or the error reply to send.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <string>
#include <string_view>
#include <variant>

namespace oppx::proto {

namespace json = boost::json;

// JSON-RPC 2.0 §5.1 codes; oppx-specific ones live in the server range (-32000..-32099).
enum class ErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternal = -32603,
  kVersionMismatch = -32001,
  kShuttingDown = -32002,
  kCancelled = -32800,  // as LSP: the request was cancelled
};

// data.kind values; docs/protocol.md lists them for plugin authors.
namespace kind {
inline constexpr std::string_view kParseError = "parse_error";
inline constexpr std::string_view kInvalidRequest = "invalid_request";
inline constexpr std::string_view kBatchUnsupported = "batch_unsupported";
inline constexpr std::string_view kTooLarge = "too_large";
inline constexpr std::string_view kDuplicateId = "duplicate_id";
inline constexpr std::string_view kMethodNotFound = "method_not_found";
inline constexpr std::string_view kInvalidParams = "invalid_params";
inline constexpr std::string_view kInternal = "internal";
inline constexpr std::string_view kVersionMismatch = "version_mismatch";
inline constexpr std::string_view kShuttingDown = "shutting_down";
inline constexpr std::string_view kCancelled = "cancelled";
inline constexpr std::string_view kDisconnected = "disconnected";  // client side: the connection ended
inline constexpr std::string_view kTimeout = "timeout";            // client side: no reply in time
// Why a connector (or a model server) is down: the daemon acts on these, and a server's own
// error can never claim one (RpcError::received).
inline constexpr std::string_view kNotInstalled = "not_installed";  // its program is missing
inline constexpr std::string_view kStopped = "stopped";             // its program ended
inline constexpr std::string_view kConfig = "config";               // its definition cannot work
inline constexpr std::string_view kUnsupported = "unsupported";     // a transport oppx does not speak
inline constexpr std::string_view kLogin = "login";                 // 401/403, "unauthorized", "token expired"
inline constexpr std::string_view kUnreachable = "unreachable";     // connect refused, DNS, TLS, no route
// An OAuth server's 403 insufficient_scope: the call needs a wider login (a step-up) than the one
// given; only that call fails, and a new login with the wider scope lets it be repeated.
inline constexpr std::string_view kStepUp = "step_up";
// A client refused at the daemon's descriptor limit (a null id, then the connection closes).
inline constexpr std::string_view kTooManyOpenFiles = "too_many_open_files";
}  // namespace kind

// The client notification that cancels one of its requests in flight (LSP's name): params {"id"}.
inline constexpr std::string_view kCancelRequest = "$/cancelRequest";

struct RpcError {
  int code = static_cast<int>(ErrorCode::kInternal);
  std::string message;
  std::string kind;
  json::object data;  // extra fields besides kind (for instance "field")
  // Parsed from a peer's message (from_json), not made here: its kind is the peer's claim, which
  // the daemon never takes as its own (an MCP server's error cannot say "disconnected"). A line a
  // transport made itself is parsed too, but JsonRpcPeer clears this for it (on_own_line).
  bool received = false;

  static RpcError make(ErrorCode code, std::string_view kind, std::string message);
  json::object to_json() const;
  static RpcError from_json(const json::value& error);
};

struct Request {
  json::value id;  // string or integer
  std::string method;
  json::value params;  // object, array or null when absent
};

struct Notification {
  std::string method;
  json::value params;
};

struct Response {
  json::value id;
  bool ok = true;
  json::value result;
  RpcError error;
};

using Message = std::variant<Request, Notification, Response>;

// What a malformed line turns into: the error to send back, with the id when one was readable.
struct Rejection {
  json::value id;  // null when the id itself was unusable
  RpcError error;
};

boost::system::result<Message, Rejection> parse_message(std::string_view line);

// A value as JSON text, the one way oppx writes JSON (the wire, files, what the model and the user
// see). A number with a fraction or an exponent is written in its shortest form that reads back
// the same, as JavaScript writes it (0.1, where Boost.JSON 1.81 writes 1E-1); one too large for a
// double (1e999, which Boost reads as infinity and would write as the bare word Infinity, not
// JSON) is written as null, as JSON.stringify does.
std::string json_text(const json::value& v);
std::string json_text(const json::object& o);
std::string json_text(const json::array& a);

// Serialisers return one line without its trailing newline.
std::string serialize_request(const json::value& id, std::string_view method, const json::value& params);
std::string serialize_notification(std::string_view method, const json::value& params);
std::string serialize_result(const json::value& id, const json::value& result);
std::string serialize_error(const json::value& id, const RpcError& error);

// A stable text form of an id for maps: strings as "s:…", integers as "i:…".
std::string id_key(const json::value& id);

}  // namespace oppx::proto
