// The method table's machinery: a name → handler map with typed binders. A handler's params type
// P picks its decoder (`proto::decode<P>`, proto/decode.h), which runs first and answers -32602
// with the failing field; the handler only ever sees params that decoded. The table itself, one
// line per method, is in methods.cpp. No Asio here.
#pragma once

#include "common/jsonrpc_peer.h"
#include "proto/decode.h"
#include "proto/jsonrpc.h"

#include <boost/json/value_from.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <string>
#include <vector>

namespace oppx::daemon {

class Server;
class SessionBrowser;

// A session (session/open): what lives as long as the connection that opened it. Its allows are
// never saved; its browser (daemon/browser.h) ends with it.
struct Session {
  std::string id;
  std::string cwd, root;                    // the working folder and its repository root
  std::string mode;                         // "chat", "print", "plan" or "editor"
  std::vector<std::string> allow;           // rules allowed for this session only
  std::shared_ptr<SessionBrowser> browser;  // after browser/start
};

// Who is asking: one per connection.
struct Client {
  std::uint64_t id = 0;
  std::int64_t pid = 0;
  std::int64_t uid = 0;
  std::string name;                                     // from hello
  std::map<std::string, std::string, std::less<>> env;  // from hello: for ${VAR} and the connectors' paths
  std::string cwd;                                      // from hello: where it runs (its repository)
  std::weak_ptr<JsonRpcPeer> peer;                      // for notifications to this client
  std::optional<Session> session;                       // after session/open
};

template <class CallOperator>
struct HandlerParams;
template <class C, class P>
struct HandlerParams<void (C::*)(const P&, Reply, Client&) const> {
  using type = P;
};

class Router {
 public:
  using Handler = std::function<void(const proto::Request&, Reply, Client&)>;

  void add(std::string method, Handler handler);

  // A handler of decoded params: the decoder is deduced from P.
  template <class P>
  void add(std::string method, void (*fn)(const P&, Reply, Client&)) {
    add(std::move(method), [fn](const proto::Request& req, Reply reply, Client& client) {
      auto params = proto::decode<P>(req.params);
      if (!params) return reply.fail(invalid_params(params.error()));
      fn(*params, std::move(reply), client);
    });
  }
  template <class P>
  void add(std::string method, Server& server, void (*fn)(Server&, const P&, Reply, Client&)) {
    add(std::move(method), [&server, fn](const proto::Request& req, Reply reply, Client& client) {
      auto params = proto::decode<P>(req.params);
      if (!params) return reply.fail(invalid_params(params.error()));
      fn(server, *params, std::move(reply), client);
    });
  }

  // A handler object (a lambda that holds state), P deduced from its call operator.
  template <class Fn>
  requires(!std::is_invocable_v<Fn, const proto::Request&, Reply, Client&>) void add(std::string method, Fn fn) {
    using P = typename HandlerParams<decltype(&Fn::operator())>::type;
    add(std::move(method), [fn = std::move(fn)](const proto::Request& req, Reply reply, Client& client) {
      auto params = proto::decode<P>(req.params);
      if (!params) return reply.fail(invalid_params(params.error()));
      fn(*params, std::move(reply), client);
    });
  }

  // -32602 for a decoder's message "params.<field>: <what>", with data.field.
  static proto::RpcError invalid_params(const std::string& message);

  void dispatch(const proto::Request& req, Reply reply, Client& client) const;
  std::vector<std::string> methods() const;

 private:
  std::map<std::string, Handler, std::less<>> handlers_;
};

}  // namespace oppx::daemon
