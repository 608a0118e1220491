// The JSON-RPC peer: ids, pending calls both ways, dispatch, exactly one reply per request.
// It never knows which transport it has. Incoming requests get a Reply that must be used once;
// a Reply dropped unused answers with an internal error, so no caller ever waits forever.
#pragma once

#include "common/transport.h"
#include "proto/jsonrpc.h"

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <unordered_map>

namespace oppx {

class JsonRpcPeer;

// What a request's transport may need to know about it (Message).
struct RequestOptions {
  bool repeatable = true;
  bool slow_first_byte = false;
  std::string label;
  std::vector<std::pair<std::string, std::string>> headers;  // Message::headers
};

class Reply {
 public:
  Reply(Reply&& other) noexcept;
  Reply& operator=(Reply&&) = delete;
  Reply(const Reply&) = delete;
  ~Reply();

  void ok(boost::json::value result);
  void fail(proto::RpcError error);
  bool done() const { return done_; }
  // True once the caller went away (disconnected); a result sent then is dropped.
  bool cancelled() const;
  // Runs when the caller goes away before the reply, or cancels it (JsonRpcPeer::cancel_request);
  // at most once. Only a request that set it can be cancelled without hanging up.
  void on_cancel(std::function<void()> fn);
  // The caller withdrew the request (MCP's notifications/cancelled, after which no answer is
  // expected): let go without one.
  void withdraw();
  const boost::json::value& id() const { return id_; }

 private:
  friend class JsonRpcPeer;
  struct State {
    bool cancelled = false;
    std::function<void()> on_cancel;
    // For the debug log line of each request (only set when debug lines are written).
    std::string method;
    std::chrono::steady_clock::time_point received;
  };
  Reply(std::weak_ptr<JsonRpcPeer> peer, boost::json::value id, std::shared_ptr<State> state);
  void finish(std::string line, std::string_view error_kind);

  std::weak_ptr<JsonRpcPeer> peer_;
  boost::json::value id_;
  std::shared_ptr<State> state_;
  bool done_ = false;
};

class JsonRpcPeer : public std::enable_shared_from_this<JsonRpcPeer> {
 public:
  using CallResult = boost::system::result<boost::json::value, proto::RpcError>;
  struct Options {
    std::string name;  // for log lines: "client 3", "mcp:everything"
    std::function<void(proto::Request, Reply)> on_request;
    std::function<void(proto::Notification)> on_notification;
    std::function<void(const TransportError&)> on_closed;
    // A server answers malformed lines with an error; a client of an MCP server only logs them.
    bool reply_to_malformed = true;
    std::size_t max_in_flight = 1024;  // incoming requests not yet answered
  };

  static std::shared_ptr<JsonRpcPeer> create(std::unique_ptr<Transport> transport, Options options);
  ~JsonRpcPeer();

  void start();
  // `cancels`: the id of the request this notification cancels, if it does (the transport may
  // then end that request's exchange).
  void notify(std::string_view method, const boost::json::value& params, const boost::json::value& cancels = nullptr);
  // Sends a request; `done` runs once with the result, the error, or kind "disconnected". An
  // error the far end sent has `received` set; one the transport made (on_request_failed) not.
  boost::json::value call(std::string_view method, const boost::json::value& params,
                          std::function<void(CallResult)> done, RequestOptions request = {});
  // Drops a call still waiting for its answer without running its `done` (its caller went away);
  // a late answer with that id is then skipped as unknown.
  void forget(const boost::json::value& id);
  // The far end cancels its request `id` without hanging up: when it is in flight and cancellable
  // (its handler set Reply::on_cancel), that hook runs, `answer` is sent at once in its place and
  // its own reply, when it comes, is dropped. Returns false (and does nothing) otherwise.
  bool cancel_request(const boost::json::value& id, const proto::RpcError& answer);
  void close();  // graceful: queued replies are written first
  void abort();

  bool closed() const { return closed_; }
  std::size_t in_flight() const { return incoming_.size(); }
  std::size_t calls_waiting() const { return outgoing_.size(); }  // our requests not yet answered
  const std::string& name() const { return options_.name; }

 private:
  friend class Reply;
  JsonRpcPeer(std::unique_ptr<Transport> transport, Options options);
  void on_line(std::string line);
  void request_failed(const boost::json::value& id, proto::RpcError error);
  void on_closed(const TransportError& e);
  void send(Message m);
  void send_response(std::string line, const boost::json::value& id = nullptr);  // the id it answers
  void reply_done(const boost::json::value& id);

  std::unique_ptr<Transport> transport_;
  Options options_;
  std::unordered_map<std::string, std::shared_ptr<Reply::State>> incoming_;
  std::unordered_map<std::string, std::function<void(CallResult)>> outgoing_;
  std::int64_t next_id_ = 1;
  bool closed_ = false;
};

}  // namespace oppx
