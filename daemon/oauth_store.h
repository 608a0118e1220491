// What OAuth logins leave behind (issue 27), owned by the daemon alone: the client each
// authorization server knows oppx as, and the tokens, per authorization server and resource, so
// that a token is only ever sent to the resource it was issued for. Both live in user state as
// StateFiles (atomic writes, 0600, a file that cannot be trusted set aside and worth nothing).
// Nothing here logs or returns a token in any message.
#pragma once

#include "daemon/state_file.h"

#include <chrono>
#include <optional>
#include <string>

namespace oppx::daemon {

class OAuthStore {
 public:
  using Clock = std::chrono::system_clock;

  struct Client {
    std::string client_id;
    std::string client_secret;  // empty for a public client
    std::string auth_method;    // none | client_secret_post | client_secret_basic
    std::string redirect_uri;   // the one it was registered with (its loopback port is used again)
  };
  struct Token {
    std::string access_token;
    std::string refresh_token;  // empty when the server gave none
    std::string scope;
    std::optional<Clock::time_point> expires_at;
    std::optional<std::chrono::seconds> lifetime;  // expires_in as given: the refresh margin is a share of it
    // What a refresh needs after a daemon restart: where, and as which client.
    std::string server_url;      // the connector URL the login was for
    std::string token_endpoint;  // the authorization server's
    std::string client_id;
    std::string auth_method;  // none | client_secret_post | client_secret_basic
  };
  // A token with the pair it is kept under.
  struct Grant {
    std::string issuer, resource;
    Token token;
  };

  // The files oauth-clients.json and oauth-tokens.json in `state_dir`; without `worker` they are
  // written at once, on the caller's thread.
  explicit OAuthStore(const std::string& state_dir, Worker* worker = nullptr);

  std::optional<Client> client(const std::string& issuer);
  void put_client(const std::string& issuer, const Client& c, StateFile::Saved done);

  // The token for exactly this authorization server and resource; none for any other pair.
  std::optional<Token> token(const std::string& issuer, const std::string& resource);
  void put_token(const std::string& issuer, const std::string& resource, const Token& t, StateFile::Saved done);
  // The token of the last login for a connector URL (exactly that URL), whichever pair it is under.
  std::optional<Grant> token_for_server(const std::string& server_url);
  // `oppx mcp logout`: every token for `resource`, whichever server issued it; how many went.
  int forget(const std::string& resource, StateFile::Saved done);

  // What went wrong with either file (set aside), for `oppx mcp list`; empty if nothing.
  std::string problem() const;

 private:
  StateFile clients_, tokens_;
};

}  // namespace oppx::daemon
