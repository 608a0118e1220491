// The headless browser of one session (SPEC §5): Playwright's MCP server on Chrome or Chromium,
// started by the daemon as a connector named `playwright` for that session alone (it is stateful:
// never shared), with the flags and folders the SPEC names; the tools it offers (21 of its 25);
// the page snapshot and console files its results link, put into the result. It ends with its
// session (the object's destructor), and with the daemon (the child's death signal).
#pragma once

#include "daemon/connector.h"
#include "daemon/mcp_config.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

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
struct BrowserProblem {
  std::string kind;  // not_installed | outdated | no_node | no_browser | connector_down
  std::string message;
  std::vector<std::string> steps;
  boost::json::object to_json() const;
};

// Which browser Playwright drives: a system Google Chrome (`--browser chrome`), else a system
// Chromium by its path, else Playwright's Chrome for Testing in the engine folder.
struct BrowserChoice {
  std::string kind;  // chrome | chromium | chrome-for-testing
  std::string path;
};
boost::system::result<BrowserChoice, BrowserProblem> choose_browser(const EnvMap& env);

// The connector definition for a session whose output goes to `folder` and whose pages' files are
// resolved from `cwd`; checks Node.js, the installed server and a browser first.
boost::system::result<ConnectorDef, BrowserProblem> browser_definition(const EnvMap& env, const std::string& folder,
                                                                       const std::string& cwd);

// A tool the browser offers the agent: all but those that reach the user's files, run code the
// model wrote without a question, or answer with images.
bool offered_browser_tool(std::string_view tool);
// browser_evaluate runs JavaScript the model wrote: asked every time, whatever the session allows.
bool asked_every_time(std::string_view tool);

// Puts the snapshot (.yml) and console (.log#L<n>) files that a result links into its text
// parts, when they lie inside `folder`; other links stay as they are.
void inline_browser_files(boost::json::value& result, const std::string& folder);

class SessionBrowser {
 public:
  // `session`: the session's id, its output folder's name under the cache folder.
  SessionBrowser(boost::asio::io_context& io, std::string session, std::string cwd);
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
  boost::json::object status_json() const;

 private:
  void settle(std::optional<BrowserProblem> problem);

  boost::asio::io_context& io_;
  std::string session_, cwd_, folder_;
  std::shared_ptr<Connector> connector_;
  std::optional<BrowserProblem> problem_;
  std::vector<Started> waiting_;
};

}  // namespace oppx::daemon
