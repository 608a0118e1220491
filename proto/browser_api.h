// Wire structs of browser/status, browser/start and browser/stop (docs/protocol.md, "The
// session's browser"): what the daemon answers about a session's browser and the spare server,
// and why a browser cannot start. Decoders in proto/decode.h's form, encoders as tag_invoke for
// boost::json::value_from.
#pragma once

#include "proto/decode.h"

#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::proto {

// Why the browser cannot start: browser/start's error data, browser/status's `browser` when none
// is found, a session's browser after a failed start. On the wire: reason_kind, reason, steps.
struct BrowserProblem {
  std::string kind;  // not_installed | outdated | no_node | no_browser | connector_down
  std::string message;
  std::vector<std::string> steps;
};

// browser/status's `browser`: the one it would use, or why there is none.
struct BrowserFound {
  std::string kind;  // chrome | chromium | chrome-for-testing; "" with a problem
  std::string path;
  std::optional<BrowserProblem> problem;
};

// A session's browser: browser/status's `session`, and (with session_allow) browser/start's result.
struct SessionBrowserStatus {
  std::string state = "off";  // off | starting | running | failed
  // The session's browser folder and the count of tools it offers; "" when the session never had
  // a browser (then both are left out).
  std::string folder;
  std::int64_t tools = 0;
  std::optional<std::int64_t> pid;  // once started: its server's pid, and its stderr's `log`
  std::string log;
  std::string reason;                    // why it stopped; "" when it did not
  std::optional<BrowserProblem> failed;  // after a failed start
};

// The server kept for the next session's browser.
struct BrowserSpareStatus {
  std::string state = "off";  // off | starting | running; the rest only when not off
  std::int64_t pid = 0;
  std::string log;
  std::int64_t idle_ms = 0;  // stopped after this long unused
};

struct BrowserStatusResult {
  std::string version;                   // the pinned version of the server
  std::optional<std::string> installed;  // the version installed in the engine folder; null when none
  std::string engine;
  std::string sandbox;
  BrowserFound browser;
  std::optional<SessionBrowserStatus> session;  // null without a session
  BrowserSpareStatus spare;
};

struct BrowserStartResult : SessionBrowserStatus {
  std::string session_allow;  // the session allow its tools run under
};

struct BrowserStopResult {
  std::string state = "off";
  bool was_running = false;
};

Decoded<BrowserProblem> decode(const boost::json::value& v, std::type_identity<BrowserProblem>);
Decoded<BrowserFound> decode(const boost::json::value& v, std::type_identity<BrowserFound>);
Decoded<SessionBrowserStatus> decode(const boost::json::value& v, std::type_identity<SessionBrowserStatus>);
Decoded<BrowserSpareStatus> decode(const boost::json::value& v, std::type_identity<BrowserSpareStatus>);
Decoded<BrowserStatusResult> decode(const boost::json::value& v, std::type_identity<BrowserStatusResult>);
Decoded<BrowserStartResult> decode(const boost::json::value& v, std::type_identity<BrowserStartResult>);
Decoded<BrowserStopResult> decode(const boost::json::value& v, std::type_identity<BrowserStopResult>);

void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const BrowserProblem& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const BrowserFound& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const SessionBrowserStatus& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const BrowserSpareStatus& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const BrowserStatusResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const BrowserStartResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const BrowserStopResult& v);

// The method names, declared once for the router and the clients.
inline constexpr std::string_view kBrowserStatus = "browser/status";
inline constexpr std::string_view kBrowserStart = "browser/start";
inline constexpr std::string_view kBrowserStop = "browser/stop";

}  // namespace oppx::proto
