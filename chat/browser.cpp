// The browser hint's word list and the page guard (chat/browser.h).
#include "chat/browser.h"

#include "common/fs.h"
#include "common/paths.h"
#include "common/text.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <sstream>

namespace oppx::chat {

namespace json = boost::json;

namespace {

std::string config_file() { return paths::config_dir() + "/config.json"; }

boost::system::result<json::object, std::string> read_config() {
  std::ifstream f(config_file());
  if (!f) return json::object{};
  std::stringstream ss;
  ss << f.rdbuf();
  if (ss.str().find_first_not_of(" \t\r\n") == std::string::npos) return json::object{};
  boost::system::error_code ec;
  json::value v = json::parse(ss.str(), ec);
  if (ec || !v.is_object())
    return fmt::format("{} is not a JSON object ({}); fix it first", config_file(),
                       ec ? ec.message() : "another JSON value");
  return v.as_object();
}

// Phrases that read like the answer is on a running page, not in the files. Lower case; matched
// as substrings of the lower-cased message. Kept narrow: "home page component" must not match.
constexpr std::string_view kPagePhrases[] = {
    "dev server",        "development server", "devserver",       "running app",    "running page",
    "running site",      "console error",      "console warning", "console logs",   "browser console",
    "in the browser",    "in my browser",      "in a browser",    "actually shows", "actually show",
    "actually displays", "actually renders",   "actually looks",  "actually works", "what the page shows",
    "blank page",        "blank screen",       "white screen",    "page is blank",  "page is empty",
    "nothing shows",     "nothing renders",    "doesn't load",    "does not load",  "won't load",
    "fails to load",     "network request",    "network tab",     "open the page",  "open the site",
    "load the page",     "visit the page",     "localhost"};

bool digits_at(std::string_view s, std::size_t i, std::size_t min, std::size_t max) {
  std::size_t n = 0;
  while (i + n < s.size() && std::isdigit(static_cast<unsigned char>(s[i + n]))) ++n;
  bool ends = i + n == s.size() || !std::isalnum(static_cast<unsigned char>(s[i + n]));
  return n >= min && n <= max && ends;
}

// "http://…", "https://…", "127.0.0.1:8080", "example.com:3000", "port 5173", ":5173/".
bool names_url(std::string_view s) {
  if (s.find("http://") != std::string_view::npos || s.find("https://") != std::string_view::npos) return true;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ':' && i > 0 && std::isalnum(static_cast<unsigned char>(s[i - 1])) && digits_at(s, i + 1, 2, 5))
      return true;
  }
  for (std::size_t at = s.find("port "); at != std::string_view::npos; at = s.find("port ", at + 1)) {
    bool word = at == 0 || !std::isalpha(static_cast<unsigned char>(s[at - 1]));  // not "report 12"
    if (word && digits_at(s, at + 5, 2, 5)) return true;
  }
  return false;
}

}  // namespace

bool browser_auto() {
  auto c = read_config();
  if (!c) return false;
  const json::value* v = c->if_contains("browser_auto");
  return v && v->is_bool() && v->as_bool();
}

boost::system::result<void, std::string> set_browser_auto(bool on) {
  auto c = read_config();
  if (!c) return c.error();
  (*c)["browser_auto"] = on;
  if (auto r = ensure_private_dir(paths::config_dir()); !r) return r.error();
  if (auto r = atomic_write(config_file(), proto::json_text(*c) + "\n", 0600); !r) return r.error();
  return {};
}

bool needs_running_page(std::string_view message) {
  std::string s = lower(message);
  if (names_url(s)) return true;
  for (std::string_view p : kPagePhrases) {
    if (s.find(p) != std::string::npos) return true;
  }
  return false;
}

std::string browser_hint(bool running) {
  return running ? "(Note from oppx: grep and read see the files, not a running page; the playwright tools can "
                   "open the page and read it and its console.)"
                 : "(Note from oppx: grep and read see the files, not a running page; the browser action can "
                   "open the page and read it and its console.)";
}

PageGuard::Verdict PageGuard::check(const std::string& call, bool read_only) const {
  if (read_only) return reads_.count(call) ? Verdict::kRepeat : Verdict::kRun;
  return call == last_change_ && in_a_row_ >= kMaxInARow ? Verdict::kLoop : Verdict::kRun;
}

void PageGuard::ran(const std::string& call, bool read_only) {
  if (read_only) {
    reads_.insert(call);
    return;
  }
  in_a_row_ = call == last_change_ ? in_a_row_ + 1 : 1;
  last_change_ = call;
  reads_.clear();
}

void PageGuard::clear() {
  last_change_.clear();
  in_a_row_ = 0;
  reads_.clear();
}

}  // namespace oppx::chat
