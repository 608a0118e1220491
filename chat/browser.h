// The agent's side of the browser (SPEC §5) that needs no daemon: the `browser_auto` setting, the
// hint that a message needs a running page, and the repeat guard of a stateful connector (the
// same click twice is two clicks).
// The loop (agent.cpp) offers the `browser` action and asks; the daemon runs the browser.
#pragma once

#include <boost/system/result.hpp>

#include <set>
#include <string>
#include <string_view>

namespace oppx::chat {

// config.json's "browser_auto" (`oppx browser on`, or `a` to the question): the browser starts
// with every session, before the first request, without asking.
bool browser_auto();
boost::system::result<void, std::string> set_browser_auto(bool on);

// The connector the daemon runs for a session's browser.
inline constexpr std::string_view kBrowserConnector = "playwright";

// True when a message names a URL (`localhost:5173`, `http…`, a port) or reads like it needs a
// running page ("dev server", "console errors", "actually shows", "blank page", …). The word list
// lives in browser.cpp, and only there.
bool needs_running_page(std::string_view message);

// The one-line note added to such a message while the browser is offered.
std::string browser_hint(bool running);

// Repeats of a stateful connector's calls, over one turn. A read-only call is a repeat only when
// nothing changed the page since the same read; a page-changing call always runs, except the same
// one more than kMaxInARow times in a row (reads between do not break the row): that is a loop.
class PageGuard {
 public:
  static constexpr int kMaxInARow = 5;
  enum class Verdict { kRun, kRepeat, kLoop };
  Verdict check(const std::string& call, bool read_only) const;
  void ran(const std::string& call, bool read_only);
  void clear();

 private:
  std::string last_change_;      // the last page-changing call
  int in_a_row_ = 0;             // how many times it ran in a row
  std::set<std::string> reads_;  // reads since the page last changed
};

}  // namespace oppx::chat
