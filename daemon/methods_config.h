// Handlers of the methods that change what runs: mcp/get, mcp/add, mcp/remove, consent/approve,
// consent/deny (docs/protocol.md). The table in methods.cpp binds them, one line each. Also where
// a request comes from: its working folder, and the repository root found from it.
#pragma once

#include "daemon/consent.h"
#include "daemon/router.h"

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <optional>
#include <string>

namespace oppx::daemon {

class Server;

// The repository root a request is about: params.cwd, else the cwd the client gave in hello.
std::string request_root(const std::string& cwd_param, const Client& client);

struct GetParams {
  std::string name, cwd;
  bool show_values = false;  // values as written in the file, unmasked
};
struct ConsentParams {
  std::string name, sha256, cwd;
  std::optional<FileHashes> files;  // the files it runs as shown (mcp/get "files"), path: sha256
};
struct AddParams {
  std::string name, cwd;
  boost::json::value definition;
  bool project = false, force = false;
};
struct RemoveParams {
  std::string name, cwd;
  bool project = false;
};

boost::system::result<GetParams, std::string> decode_get_params(const boost::json::value& params);
boost::system::result<ConsentParams, std::string> decode_consent_params(const boost::json::value& params);
boost::system::result<AddParams, std::string> decode_add_params(const boost::json::value& params);
boost::system::result<RemoveParams, std::string> decode_remove_params(const boost::json::value& params);

void mcp_get(Server& s, const GetParams& p, Reply reply, Client& client);
void consent_decide(Server& s, const ConsentParams& p, bool approve, Reply reply, Client& client);
void mcp_add(Server& s, const AddParams& p, Reply reply, Client& client);
void mcp_remove(Server& s, const RemoveParams& p, Reply reply, Client& client);

}  // namespace oppx::daemon
