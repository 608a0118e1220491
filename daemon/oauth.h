// OAuth for remote connectors, owned once by the daemon (issue 27): each connector URL's grant
// (its tokens, refreshed before they expire and on a 401, one refresh at a time for every
// session, which all wait for it) and the logins that make them (discovery, who the client is,
// the browser's redirect to a loopback listener or pasted, the code redeemed). The pure steps are
// in oauth_discovery.h and oauth_tokens.h, what is kept in oauth_store.h, the listener in
// oauth_callback.h. Runs on the daemon's io_context; nothing blocks. No token is logged or
// returned by anything here.
#pragma once

#include "daemon/http_transport.h"
#include "daemon/mcp_config.h"
#include "daemon/state_file.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"

#include <boost/system/result.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

class OAuthStore;
class Worker;
struct OAuthGrant;
struct OAuthLogin;

// How long a login waits for the browser's redirect.
inline constexpr std::chrono::seconds kLoginWait{180};

class OAuth {
 public:
  struct Settings {
    // A client ID metadata document's URL (config.json oauth_client_metadata_url, or
    // OPPX_OAUTH_CLIENT_METADATA_URL): used as the client_id where the server supports them.
    std::string client_metadata_url;
    // How long the login waits for the redirect (OPPX_OAUTH_LOGIN_WAIT_MS of the client, for tests).
    std::chrono::milliseconds wait = kLoginWait;
  };
  OAuth(boost::asio::io_context& io, const std::string& state_dir, Worker* worker);
  ~OAuth();
  OAuth(const OAuth&) = delete;
  OAuth& operator=(const OAuth&) = delete;

  // The auth of a connector that logs in with OAuth, for its start: one per connector URL,
  // shared by its starts (and so by every session).
  std::shared_ptr<HttpAuth> auth_for(const ConnectorDef& def, const std::string& url, const EnvMap& env);

  // Starts a login of connector `def` at `url` (expanded, as `env` gives it): `started` gets
  // what the browser opens, or why it cannot be done. `logged_in(name)` runs once the token is
  // kept, so that the daemon starts the connector again.
  using Started = std::function<void(boost::system::result<proto::McpLoginStart, std::string>)>;
  void login(const ConnectorDef& def, const std::string& url, const EnvMap& env, Settings settings, Started started);
  // Runs `done` once login `id` ended (at once when it already has): empty, or why it failed.
  // False when there is no such login.
  using Ended = std::function<void(boost::system::result<void, std::string>)>;
  bool wait(const std::string& id, Ended done);
  // The address the browser was sent to, pasted by the user: ends the login like the listener.
  boost::system::result<void, std::string> redirect(const std::string& id, const std::string& url);
  void on_logged_in(std::function<void(const std::string& connector)> fn);

  // Before the daemon's loop ends: every login under way ends, every refresh fails, every timer
  // and request is cancelled (the tokens stay kept).
  void stop();

  // Forgets every token of connector `url`; how many went.
  int logout(const std::string& url, StateFile::Saved done);
  // What mcp/list says of its login.
  proto::LoginState state_of(const std::string& url);
  // What went wrong with the store (set aside), for mcp/list; empty if nothing.
  std::string problem() const;

  // For the grants and logins (oauth.cpp, oauth_login.cpp).
  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace oppx::daemon
