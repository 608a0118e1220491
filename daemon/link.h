// Link: how a connector reaches its MCP server, and the only place that knows which way it is:
// a stdio child (a Subprocess and an NDJSON transport on its pipes) or a streamable HTTP session
// (daemon/http_transport.h). make_link() expands the definition for the starting client and
// builds one; the connector (daemon/connector.cpp) runs either the same way. Callbacks on the
// daemon's io_context; nothing blocks.
#pragma once

#include "common/transport.h"
#include "daemon/child_process.h"
#include "daemon/mcp_config.h"

#include <boost/system/result.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

class HttpAuth;

// Why a link could not be made, opened, or went away: a proto::kind value and the words for diagnose().
struct LinkFailure {
  std::string_view kind;
  std::string why;
  int http_status = 0;
};

// A stdio server's program ended on its own: its exit status and its last stderr lines.
struct ProgramStop {
  boost::system::result<ExitStatus, std::string> status;
  std::deque<std::string> last_lines;
};

class Link {
 public:
  struct Handlers {
    // Opened: the transport to speak MCP over. Runs within open() or later, at most once.
    std::function<void(std::unique_ptr<Transport>)> on_open;
    // It could not be opened, or it went away in a way that ends the connector now.
    std::function<void(LinkFailure)> on_failed;
    // Its program stopped on its own (stdio): the connector decides on a restart.
    std::function<void(ProgramStop)> on_program_stop;
  };
  virtual ~Link() = default;

  virtual void open(Handlers handlers) = 0;
  // Its transport reported an end that the connector did not ask for (TransportError::kind not
  // "closed"); the link decides what that means: at once a failure (an HTTP session), or the
  // program's stop that normally follows, and a failure only when that does not come (stdio).
  virtual void transport_ended(const TransportError& e) = 0;
  // Ends it; no handler runs after this. A program is stopped (after its transport, which the
  // caller aborts first), an HTTP session is ended (its transport closed gracefully: a DELETE).
  virtual void close() = 0;
  // Whether its transport is closed gracefully (queued messages written, the session ended) or aborted.
  virtual bool closes_gracefully() const = 0;
  // True when a lost connection is reported by on_program_stop (with its exit status and last
  // lines), so the MCP client stays quiet about it.
  virtual bool reports_its_loss() const = 0;
  // What the reason of a start timeout adds ("; its log is …"), empty when it has no log.
  virtual std::string log_note() const = 0;
  virtual std::int64_t pid() const { return 0; }
};

struct LinkContext {
  std::string log_path;              // a program's stderr log
  std::vector<std::string> secrets;  // of this start (secrets_of)
  // The HTTP server stream opened late: what it announced meanwhile (list_changed) was lost.
  std::function<void()> on_late_stream;
  // An HTTP connector that logs in with OAuth: its auth, for the URL it is started with.
  std::function<std::shared_ptr<HttpAuth>(const std::string& url)> auth_for;
};

// Builds the link of `def` for a start by a client with environment `env`: ${VAR}s expanded,
// the folder and the URL checked. A definition that cannot be used is a kConfig failure.
using LinkResult = boost::system::result<std::shared_ptr<Link>, LinkFailure>;
using LinkFactory = std::function<LinkResult(boost::asio::io_context& io, const ConnectorDef& def, const EnvMap& env,
                                             LinkContext context)>;
LinkResult make_link(boost::asio::io_context& io, const ConnectorDef& def, const EnvMap& env, LinkContext context);

// What a start gives its program or server that may be a secret, to be hidden in all the server
// says back (mask_secrets).
std::vector<std::string> secrets_of(const ConnectorDef& def, const EnvMap& env);

}  // namespace oppx::daemon
