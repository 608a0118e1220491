// The inside of daemon/oauth.h, shared by its two files: oauth.cpp (the grants: tokens and their
// refresh) and oauth_login.cpp (a login, from discovery to the code redeemed). Includes Asio;
// only those two files include it.
#pragma once

#include "common/http_client.h"
#include "daemon/oauth.h"
#include "daemon/oauth_callback.h"
#include "daemon/oauth_discovery.h"
#include "daemon/oauth_store.h"
#include "daemon/oauth_tokens.h"

#include <boost/asio/steady_timer.hpp>

#include <vector>

namespace oppx::daemon {

// One connector URL's tokens, as its transport and its logins see them.
struct OAuthGrant : HttpAuth, std::enable_shared_from_this<OAuthGrant> {
  OAuthGrant(boost::asio::io_context& io, std::weak_ptr<OAuth::Impl> owner, std::string url)
      : owner(std::move(owner)), url(std::move(url)), timer(io) {}
  ~OAuthGrant() override;

  std::weak_ptr<OAuth::Impl> owner;
  std::string url, connector;
  std::string issuer, resource;     // the pair its token is kept under
  OAuthStore::Token kept;           // access_token empty: no login
  oauth::ClientCredentials client;  // who refreshes it
  std::string challenge;            // the last WWW-Authenticate the server sent
  bool refreshing = false;
  std::vector<std::function<void(bool, std::string)>> waiting;  // for the refresh under way
  boost::asio::steady_timer timer;                              // the refresh before it expires

  std::string token() override { return kept.access_token; }
  void refused(Refusal r, std::function<void(bool again, std::string why)> done) override;

  // A login's new token (or, empty, a logout), kept and its refresh planned; `saved` once it is
  // written.
  void take(std::string issuer, std::string resource, OAuthStore::Token token, oauth::ClientCredentials client,
            StateFile::Saved saved = {});
  void plan_refresh();
  void refresh();
  void refreshed(bool ok, std::string why);
  // "`oppx mcp login <name>`": what every message about a missing login tells the user to run.
  std::string login_command() const;
};

struct OAuth::Impl : std::enable_shared_from_this<Impl> {
  Impl(boost::asio::io_context& io, const std::string& state_dir, Worker* worker)
      : io(io), store(state_dir, worker), http(io) {}
  boost::asio::io_context& io;
  OAuthStore store;
  http::Client http;
  std::map<std::string, std::shared_ptr<OAuthGrant>> grants;  // by connector URL
  std::map<std::string, std::shared_ptr<OAuthLogin>> logins;  // by id
  std::function<void(const std::string&)> logged_in;

  std::shared_ptr<OAuthGrant> grant(const std::string& url);
};

// Ends login `l` (oauth_login.cpp) with `why`: its listener closes, its waiters are told.
void end_login(OAuthLogin& l, std::string why);

// A request to an authorization server (or the resource's metadata), with the limits of one:
// its whole answer, at most `cap` bytes.
http::awaitable<http::Outcome<http::Response>> oauth_fetch(http::Client& client, http::Request req,
                                                           std::size_t cap = 1u << 20);

// The client a connector's definition names (clientId, its secret expanded from `env`); nullopt
// when it names none, or an error when its secret's variable is unset.
boost::system::result<std::optional<oauth::ClientCredentials>, std::string> configured_client(const ConnectorDef& def,
                                                                                              const EnvMap& env);

}  // namespace oppx::daemon
