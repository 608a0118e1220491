// JSON-RPC 2.0 parsing and serialising. The parser is strict where the spec is (jsonrpc "2.0",
// method a string, id a string or integer) and liberal elsewhere: unknown members are ignored.
#include "proto/jsonrpc.h"

#include "common/text.h"

#include <boost/json/parser.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

namespace oppx::proto {

RpcError RpcError::make(ErrorCode code, std::string_view kind, std::string message) {
  RpcError e;
  e.code = static_cast<int>(code);
  e.kind = std::string(kind);
  e.message = std::move(message);
  return e;
}

json::object RpcError::to_json() const {
  json::object data = this->data;
  data["kind"] = kind;
  return json::object{{"code", code}, {"message", message}, {"data", std::move(data)}};
}

RpcError RpcError::from_json(const json::value& error) {
  RpcError e;
  e.received = true;
  const json::object* obj = error.if_object();
  if (!obj) {
    e.message = "malformed error object";
    e.kind = std::string(kind::kInternal);
    return e;
  }
  if (auto* c = obj->if_contains("code"); c && c->is_int64()) e.code = static_cast<int>(c->as_int64());
  if (auto* m = obj->if_contains("message"); m && m->is_string()) e.message = std::string(m->as_string());
  if (auto* d = obj->if_contains("data"); d && d->is_object()) {
    e.data = d->as_object();
    if (auto* k = e.data.if_contains("kind"); k && k->is_string()) e.kind = std::string(k->as_string());
    e.data.erase("kind");
  }
  return e;
}

namespace {

bool valid_id(const json::value& id) { return id.is_string() || id.is_int64() || id.is_uint64(); }

Rejection reject(json::value id, ErrorCode code, std::string_view kind, std::string message) {
  return Rejection{std::move(id), RpcError::make(code, kind, std::move(message))};
}

}  // namespace

boost::system::result<Message, Rejection> parse_message(std::string_view line) {
  // One parser per thread, reset for each line: its working stack is allocated once, not per message.
  thread_local json::parser parser;
  boost::system::error_code ec;
  parser.reset();
  parser.write(line.data(), line.size(), ec);
  json::value v = ec ? json::value() : parser.release();
  if (ec) {
    return reject(nullptr, ErrorCode::kParseError, kind::kParseError,
                  "the line is not valid JSON (" + ec.message() + "); send one JSON object per line");
  }
  if (v.is_array()) {
    return reject(nullptr, ErrorCode::kInvalidRequest, kind::kBatchUnsupported,
                  "batch arrays are not supported; send each request as its own line");
  }
  json::object* obj = v.if_object();
  if (!obj)
    return reject(nullptr, ErrorCode::kInvalidRequest, kind::kInvalidRequest, "a message must be a JSON object");

  const json::value* idp = obj->if_contains("id");
  json::value id = idp && valid_id(*idp) ? *idp : json::value(nullptr);
  const json::value* ver = obj->if_contains("jsonrpc");
  if (!ver || !ver->is_string() || ver->as_string() != "2.0") {
    return reject(id, ErrorCode::kInvalidRequest, kind::kInvalidRequest, "jsonrpc: expected \"2.0\"");
  }
  if (idp && !valid_id(*idp)) {
    return reject(
        nullptr, ErrorCode::kInvalidRequest, kind::kInvalidRequest,
        idp->is_null() ? "id: null is not allowed; use a string or an integer" : "id: expected a string or an integer");
  }

  const json::value* method = obj->if_contains("method");
  if (method) {
    if (!method->is_string())
      return reject(id, ErrorCode::kInvalidRequest, kind::kInvalidRequest, "method: expected string");
    json::value params = nullptr;
    if (json::value* p = obj->if_contains("params")) {
      if (!p->is_object() && !p->is_array()) {
        return reject(id, ErrorCode::kInvalidParams, kind::kInvalidParams, "params: expected object");
      }
      params = std::move(*p);  // moved out of the parsed line, not copied
    }
    if (!idp) return Message{Notification{std::string(method->as_string()), std::move(params)}};
    return Message{Request{std::move(id), std::string(method->as_string()), std::move(params)}};
  }

  if (!idp)
    return reject(nullptr, ErrorCode::kInvalidRequest, kind::kInvalidRequest, "a message needs a method or an id");
  Response r;
  r.id = std::move(id);
  if (json::value* res = obj->if_contains("result")) {
    r.result = std::move(*res);
  } else if (const json::value* err = obj->if_contains("error")) {
    r.ok = false;
    r.error = RpcError::from_json(*err);
  } else {
    return reject(r.id, ErrorCode::kInvalidRequest, kind::kInvalidRequest, "a response needs result or error");
  }
  return Message{std::move(r)};
}

namespace {

bool has_double(const json::value& v);

bool has_double(const json::array& a) {
  return std::any_of(a.begin(), a.end(), [](const json::value& x) { return has_double(x); });
}

bool has_double(const json::object& o) {
  return std::any_of(o.begin(), o.end(), [](const json::key_value_pair& kv) { return has_double(kv.value()); });
}

bool has_double(const json::value& v) {
  if (const json::array* a = v.if_array()) return has_double(*a);
  if (const json::object* o = v.if_object()) return has_double(*o);
  return v.is_double();
}

void write_json(std::string& out, const json::value& v);

void write_json(std::string& out, const json::array& a) {
  out += '[';
  const char* sep = "";
  for (const json::value& x : a) {
    out += std::exchange(sep, ",");
    write_json(out, x);
  }
  out += ']';
}

void write_json(std::string& out, const json::object& o) {
  out += '{';
  const char* sep = "";
  for (const auto& kv : o) {
    out += std::exchange(sep, ",");
    out += json::serialize(kv.key());
    out += ':';
    write_json(out, kv.value());
  }
  out += '}';
}

void write_json(std::string& out, const json::value& v) {
  if (const json::array* a = v.if_array()) return write_json(out, *a);
  if (const json::object* o = v.if_object()) return write_json(out, *o);
  if (!v.is_double()) {
    out += json::serialize(v);
    return;
  }
  double d = v.get_double();
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  if (!std::isfinite(d) || ec != std::errc{}) {
    out += "null";
  } else {
    out.append(buf, end);
    // 100.0 is written "100" by to_chars: ".0" keeps it a double for the reader.
    if (std::find_if(buf, end, [](char c) { return c == '.' || c == 'e'; }) == end) out += ".0";
  }
}

// Boost's own writer for what has no fraction (most messages), as it is faster.
template <class T>
std::string text_of(const T& v) {
  if (!has_double(v)) return json::serialize(v);
  std::string out;
  write_json(out, v);
  return out;
}

}  // namespace

std::string json_text(const json::value& v) { return text_of(v); }
std::string json_text(const json::object& o) { return text_of(o); }
std::string json_text(const json::array& a) { return text_of(a); }

// The envelope is written around the serialised parts, so that params and results (a tool's
// whole answer) are not deep-copied into a new object first.
std::string serialize_request(const json::value& id, std::string_view method, const json::value& params) {
  std::string out = R"({"jsonrpc":"2.0","id":)" + json_text(id) + R"(,"method":)" +
                    json::serialize(json::string_view(method.data(), method.size()));
  if (!params.is_null()) out += R"(,"params":)" + json_text(params);
  out += '}';
  return valid_utf8(std::move(out));
}

std::string serialize_notification(std::string_view method, const json::value& params) {
  std::string out = R"({"jsonrpc":"2.0","method":)" + json::serialize(json::string_view(method.data(), method.size()));
  if (!params.is_null()) out += R"(,"params":)" + json_text(params);
  out += '}';
  return valid_utf8(std::move(out));
}

std::string serialize_result(const json::value& id, const json::value& result) {
  return valid_utf8(R"({"jsonrpc":"2.0","id":)" + json_text(id) + R"(,"result":)" + json_text(result) + '}');
}

std::string serialize_error(const json::value& id, const RpcError& error) {
  return valid_utf8(json_text(json::object{{"jsonrpc", "2.0"}, {"id", id}, {"error", error.to_json()}}));
}

std::string id_key(const json::value& id) {
  if (id.is_string()) return "s:" + std::string(id.as_string());
  if (id.is_int64()) return "i:" + std::to_string(id.as_int64());
  if (id.is_uint64()) return "i:" + std::to_string(id.as_uint64());
  return "null";
}

}  // namespace oppx::proto
