// The headless browser of one session (SPEC §5): Playwright's MCP server on Chrome or Chromium,
// started by the daemon as a connector named `playwright` for that session alone (it is stateful:
// never shared), with the flags and folders the SPEC names; the tools it offers (21 of its 25);
// the page snapshot and console files its results link, put into the result. It ends with its
// session (the object's destructor), and with the daemon (the child's death signal).
#pragma once

#include "daemon/connector.h"
#include "daemon/mcp_config.h"
#include "proto/browser_api.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

inline constexpr std::string_view kBrowserName = "playwright";
// The session allow the browser's tools run under (never saved; browser_evaluate still asks).
inline constexpr std::string_view kBrowserSessionRule = "playwright.*";

// Why the browser cannot start, with its kind (docs/protocol.md, browser/start) and the steps.
using BrowserProblem = proto::BrowserProblem;

// Which browser Playwright drives: a system Google Chrome (`--browser chrome`), else a system
// Chromium by its path, else Playwright's Chrome for Testing in the engine folder.
struct BrowserChoice {
  std::string kind;  // chrome | chromium | chrome-for-testing
  std::string path;
};
boost::system::result<BrowserChoice, BrowserProblem> choose_browser(const EnvMap& env);

// The server's definition, the same for every session (no --output-dir): a session's folder
// reaches it as the connector's root (SessionBrowser::start). Checks Node.js, the installed
// server and a browser first.
boost::system::result<ConnectorDef, BrowserProblem> browser_definition(const EnvMap& env);

// A tool the browser offers the agent: all but those that reach the user's files, run code the
// model wrote without a question, or answer with images.
bool offered_browser_tool(std::string_view tool);
// A tool that runs code the model wrote (browser_evaluate; any tool whose name says it evaluates
// or runs code or a script; any tool the server listed with a `function`, `code`, `script` or
// `expression` argument): asked every time, whatever the session allows.
bool asked_every_time(std::string_view tool);
// Notes the tools of a listed tools array that take code (asked_every_time answers for them).
void note_code_tools(const boost::json::array& tools);

// Why the browser may not open `url`, in words; empty when it may. Only http:, https: and
// about:blank are opened: file:, view-source: (of anything), javascript:, data:, chrome:,
// chrome-extension:, devtools:, filesystem:, a blob: whose origin is not http(s), about: pages
// other than blank, and every other scheme are refused. The URL is read as a browser reads it:
// blanks and control characters around it dropped, tabs and line breaks inside it ignored, the
// scheme in any case. One with no scheme is opened as https:// (Playwright adds it).
std::string refused_url(std::string_view url);
// Why a call to the browser is refused for an address among its arguments (`url`, `href`, `uri`
// or a name ending so, at any depth): "<tool> may not open <scheme>: …". Empty when none is.
std::string refused_browser_call(std::string_view tool, const boost::json::value& arguments);

// Puts the snapshot (.yml) and console (.log#L<n>) files that a result links into its text
// parts, when they lie inside `folder`; other links stay as they are.
void inline_browser_files(boost::json::value& result, const std::string& folder);

// One Playwright MCP server kept started with nothing open, for the next session's browser: the
// server reads its roots and starts Chromium at its first tool call, so a session that takes the
// spare pays only for Chromium's own start. It is filled in the background once a session's
// browser was used (its first call ended), and stopped after `OPPX_BROWSER_SPARE_IDLE_MS` unused
// (10 minutes; 0 keeps no spare), and with the daemon. Its log is browser/spare-<n>.log.
class BrowserSpare {
 public:
  explicit BrowserSpare(boost::asio::io_context& io);
  ~BrowserSpare();
  BrowserSpare(const BrowserSpare&) = delete;
  BrowserSpare& operator=(const BrowserSpare&) = delete;

  // The spare when it runs the same definition (the same node, server and browser); it is no
  // longer the spare then. Null otherwise (none, still starting, or another definition).
  std::shared_ptr<Connector> take(const ConnectorDef& def);
  // Starts a spare with `def` unless one runs or starts, with the environment of the client whose
  // browser was used (its OPPX_BROWSER_SPARE_IDLE_MS too).
  void fill(const ConnectorDef& def, const EnvMap& env);
  void stop();
  proto::BrowserSpareStatus status() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// How long a spare is kept unused: OPPX_BROWSER_SPARE_IDLE_MS in `env`, else 10 minutes.
std::chrono::milliseconds spare_idle(const EnvMap& env);

class SessionBrowser {
 public:
  // `session`: the session's id, its output folder's name under the cache folder. `spare`, when
  // given, outlives the session browser (the daemon's): its server is taken when it matches.
  SessionBrowser(boost::asio::io_context& io, std::string session, BrowserSpare* spare = nullptr);
  ~SessionBrowser();  // stops the server and, with it, its browser processes
  SessionBrowser(const SessionBrowser&) = delete;
  SessionBrowser& operator=(const SessionBrowser&) = delete;

  // Starts it with the client's environment; `done` gets nothing once it runs, or the problem.
  // A second start while one is under way waits for the same answer.
  using Started = std::function<void(std::optional<BrowserProblem>)>;
  void start(const EnvMap& env, Started done);
  void stop();

  std::string state() const;  // off | starting | running | failed
  const std::string& folder() const { return folder_; }
  std::shared_ptr<Connector> connector() const { return connector_; }
  boost::json::array tools() const;  // the offered ones
  proto::SessionBrowserStatus status() const;

 private:
  void settle(std::optional<BrowserProblem> problem);

  boost::asio::io_context& io_;
  BrowserSpare* spare_;
  std::string session_, folder_;
  std::shared_ptr<Connector> connector_;
  std::optional<BrowserProblem> problem_;
  std::vector<Started> waiting_;
};

}  // namespace oppx::daemon
