// The session browser: finding Node.js, the installed server and a browser; the server's command
// line; the offered tools; the linked files put into results; the connector's start, watched until
// it runs or fails. Callbacks only, on the daemon's loop.
#include "daemon/browser.h"

#include "common/changes.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/playwright.h"
#include "common/text.h"
#include "daemon/child_process.h"
#include "proto/mcp_results.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json.hpp>

#include <fmt/format.h>

#include <array>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> path_env(const EnvMap& env) {
  auto it = env.find("PATH");
  return {"PATH=" + (it == env.end() ? std::string("/usr/local/bin:/usr/bin:/bin") : it->second)};
}

std::string on_path(const EnvMap& env, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (std::string p = find_program(n, path_env(env)); !p.empty()) return p;
  }
  return {};
}

// Playwright's own Chromium build, when one was downloaded into the engine folder.
std::string chrome_for_testing() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(playwright::browsers_dir(), ec)) {
    if (!entry.path().filename().string().starts_with("chromium-")) continue;
    for (const char* sub : {"chrome-linux64/chrome", "chrome-linux/chrome"}) {
      fs::path exe = entry.path() / sub;
      if (::access(exe.c_str(), X_OK) == 0) return exe.string();
    }
  }
  return {};
}

std::string real(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}

// The file a link names (…/page-1.yml or …/console-1.log#L4), read when it lies in `folder`.
std::optional<std::string> read_linked(const std::string& path, const std::string& real_folder) {
  std::string r = real(path);
  if (r.empty() || real_folder.empty() || !r.starts_with(real_folder + "/")) return std::nullopt;
  std::ifstream f(r);
  if (!f) return std::nullopt;
  constexpr std::size_t kCap = 256 * 1024;  // the result is cut far below this anyway
  std::string text(kCap, '\0');
  f.read(text.data(), static_cast<std::streamsize>(kCap));
  text.resize(static_cast<std::size_t>(f.gcount()));
  return text;
}

std::string from_line(const std::string& text, long line) {
  std::size_t at = 0;
  for (long i = 1; i < line && at != std::string::npos; ++i) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  return at == std::string::npos ? std::string() : text.substr(at);
}

void trim_end(std::string& s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
}

// One line of a result: its link into `folder` replaced by the file's text.
std::string inline_line(const std::string& line, const std::string& folder, const std::string& real_folder) {
  auto at = line.find(folder + "/");
  if (at == std::string::npos) return line;
  auto end = line.find_first_of(") \t", at);
  std::string target = line.substr(at, end == std::string::npos ? std::string::npos : end - at);
  long from = 1;
  if (auto hash = target.find("#L"); hash != std::string::npos) {
    from = std::strtol(target.c_str() + hash + 2, nullptr, 10);
    target.resize(hash);
  }
  auto text = read_linked(target, real_folder);
  if (!text) return line;
  if (target.ends_with(".yml") || target.ends_with(".yaml")) {
    trim_end(*text);
    return "- Snapshot:\n```yaml\n" + *text + "\n```";
  }
  std::string entries = from_line(*text, std::max(from, 1L));
  trim_end(entries);
  std::string label = line.substr(0, at);
  while (!label.empty() && (label.back() == ' ' || label.back() == ':' || label.back() == '(' || label.back() == '['))
    label.pop_back();
  if (label.empty() || label == "-") label = "- Console";
  return label + ":\n" + (entries.empty() ? std::string("(none)") : entries);
}

}  // namespace

boost::system::result<BrowserChoice, BrowserProblem> choose_browser(const EnvMap& env) {
  std::string chrome = on_path(env, {"google-chrome", "google-chrome-stable"});
  if (chrome.empty() && ::access("/opt/google/chrome/chrome", X_OK) == 0) chrome = "/opt/google/chrome/chrome";
  if (!chrome.empty()) return BrowserChoice{"chrome", chrome};
  if (std::string c = on_path(env, {"chromium", "chromium-browser"}); !c.empty()) return BrowserChoice{"chromium", c};
  if (std::string c = chrome_for_testing(); !c.empty()) return BrowserChoice{"chrome-for-testing", c};
  return BrowserProblem{
      "no_browser",
      "no Google Chrome or Chromium was found (on PATH, or Playwright's own in " + playwright::browsers_dir() + ")",
      {"install Chromium (Debian: `sudo apt install chromium`) or Google Chrome, then `/browser "
       "start` (or `oppx browser status` to check)",
       "or let Playwright download its Chrome for Testing: `PLAYWRIGHT_BROWSERS_PATH=" + playwright::browsers_dir() +
           " npx --prefix " + playwright::engine_dir() + " playwright install chromium`"}};
}

boost::system::result<ConnectorDef, BrowserProblem> browser_definition(const EnvMap& env) {
  std::string node = on_path(env, {"node"});
  if (node.empty())
    return BrowserProblem{
        "no_node",
        fmt::format("the browser needs Node.js {}+ (`node` on PATH), and none was found", playwright::kNodeMajorNeeded),
        {"install Node.js (Debian: `sudo apt install nodejs npm`), then `oppx browser install`"}};
  std::string installed = playwright::installed_version();
  if (installed.empty())
    return BrowserProblem{std::string(proto::kind::kNotInstalled),
                          fmt::format("Playwright's MCP server is not installed in {}", playwright::engine_dir()),
                          {"`oppx browser install` (npm, about 20 MB), or answer y when the chat offers the browser"}};
  if (installed != playwright::kMcpVersion)
    return BrowserProblem{"outdated",
                          fmt::format("{} {} is installed in {}; this oppx uses {}", playwright::kMcpPackage, installed,
                                      playwright::engine_dir(), playwright::kMcpVersion),
                          {"`oppx browser install --update`"}};
  auto browser = choose_browser(env);
  if (!browser) return browser.error();

  ConnectorDef d;
  d.name = std::string(kBrowserName);
  d.command = node;
  // No --output-dir: it would tie the server to one session from its start. Playwright MCP reads the
  // client's roots at its first tool call and, without an output dir, writes into
  // `<first root>/.playwright-mcp`, resolving the file names a tool is given in that root too
  // (never in the user's repository). The root is the session's folder (SessionBrowser::start).
  // Never --allow-unrestricted-file-access: without it the server itself refuses file: addresses
  // and files outside that root. Its --blocked-origins/--allowed-origins match http origins of
  // requests only (no scheme, no navigation): oppx refuses other schemes itself (refused_url).
  d.args = {playwright::cli_js(), "--headless", "--isolated",   "--image-responses", "omit", "--codegen", "none",
            "--console-level",    "warning",    "--file-paths", "absolute"};
  if (browser->kind == "chrome") {
    d.args.insert(d.args.end(), {"--browser", "chrome"});
  } else if (browser->kind == "chromium") {
    d.args.insert(d.args.end(), {"--executable-path", browser->path});
  } else {
    d.args.insert(d.args.end(), {"--browser", "chromium"});
  }
  if (::geteuid() == 0) d.args.emplace_back("--no-sandbox");  // Chromium refuses to start as root with it on
  d.env = {{"PLAYWRIGHT_BROWSERS_PATH", playwright::browsers_dir()}};
  d.cwd = paths::cache_dir() + "/browser";
  d.canonical = fmt::format("{{\"browser\":\"{}\"}}", browser->path);
  d.file = "(oppx's browser)";
  return d;
}

bool offered_browser_tool(std::string_view tool) {
  static constexpr std::array<std::string_view, 4> kNever{"browser_run_code_unsafe", "browser_file_upload",
                                                          "browser_drop", "browser_take_screenshot"};
  return std::find(kNever.begin(), kNever.end(), tool) == kNever.end();
}

namespace {

std::mutex code_tools_mutex;
std::set<std::string, std::less<>> code_tools;  // listed with a code argument (note_code_tools)

bool takes_code(const json::value& tool) {
  const json::object* t = tool.if_object();
  const json::value* schema = t ? t->if_contains("inputSchema") : nullptr;
  const json::value* props = schema && schema->is_object() ? schema->as_object().if_contains("properties") : nullptr;
  if (!props || !props->is_object()) return false;
  for (const auto& member : props->as_object()) {
    std::string k = lower(member.key());
    for (std::string_view w : {"function", "code", "script", "expression", "javascript"})
      if (k == w) return true;
  }
  return false;
}

}  // namespace

bool asked_every_time(std::string_view tool) {
  std::string n = lower(tool);
  for (std::string_view w : {"evaluate", "eval", "run_code", "runcode", "script", "javascript"})
    if (n.find(w) != std::string::npos) return true;
  std::lock_guard lock(code_tools_mutex);
  return code_tools.find(tool) != code_tools.end();
}

void note_code_tools(const json::array& tools) {
  std::lock_guard lock(code_tools_mutex);
  for (const auto& t : tools) {
    const json::value* name = t.is_object() ? t.as_object().if_contains("name") : nullptr;
    if (name && name->is_string() && takes_code(t)) code_tools.emplace(name->as_string());
  }
}

namespace {

// The URL as a browser reads it (WHATWG URL): C0 controls and spaces around it dropped, tabs and
// line breaks inside it removed.
std::string as_browser_reads(std::string_view url) {
  auto blank = [](char c) { return static_cast<unsigned char>(c) <= 0x20; };
  while (!url.empty() && blank(url.front())) url.remove_prefix(1);
  while (!url.empty() && blank(url.back())) url.remove_suffix(1);
  std::string out;
  for (char c : url)
    if (c != '\t' && c != '\n' && c != '\r') out += c;
  return out;
}

// The scheme in lower case, and what follows its ':'; nullopt when it has none (a browser would
// not read one: the first character is not a letter, or no ':' ends the letters, digits and + - .).
std::optional<std::pair<std::string, std::string>> scheme_of(const std::string& url) {
  if (url.empty() || !std::isalpha(static_cast<unsigned char>(url[0]))) return std::nullopt;
  std::size_t i = 1;
  while (i < url.size() &&
         (std::isalnum(static_cast<unsigned char>(url[i])) || url[i] == '+' || url[i] == '-' || url[i] == '.'))
    ++i;
  if (i == url.size() || url[i] != ':') return std::nullopt;
  return std::pair{lower(std::string_view(url).substr(0, i)), url.substr(i + 1)};
}

bool web_scheme(std::string_view scheme) { return scheme == "http" || scheme == "https"; }

bool names_an_address(std::string_view key) {
  std::string k = lower(key);
  return k.ends_with("url") || k.ends_with("uri") || k.ends_with("href");
}

std::string refused_in(const json::value& v, std::string_view key) {
  if (v.is_string() && names_an_address(key)) return refused_url(v.as_string());
  if (v.is_array()) {
    for (const auto& x : v.as_array())
      if (std::string why = refused_in(x, key); !why.empty()) return why;
  } else if (v.is_object()) {
    for (const auto& member : v.as_object())
      if (std::string why = refused_in(member.value(), member.key()); !why.empty()) return why;
  }
  return {};
}

}  // namespace

std::string refused_url(std::string_view given) {
  std::string url = as_browser_reads(given);
  auto scheme = scheme_of(url);
  if (!scheme || web_scheme(scheme->first)) return {};
  const std::string& name = scheme->first;
  std::string why;
  if (name == "about") {
    if (lower(scheme->second) == "blank") return {};
    why = "it is one of the browser's own pages";
  } else if (name == "blob") {
    auto inner = scheme_of(as_browser_reads(scheme->second));
    if (inner && web_scheme(inner->first)) return {};
    why = "its origin is not a web page's (a local file's, or none)";
  } else if (name == "file") {
    why = "it reads your files";
  } else if (name == "view-source") {
    why = "it shows the source of any address, your files included";
  } else if (name == "javascript") {
    why = "it runs code the model wrote, which only browser_evaluate may do, asked every time";
  } else if (name == "data") {
    why = "it makes a page, scripts included, out of the model's own text";
  } else if (name == "filesystem") {
    why = "it reads the files the browser keeps";
  } else if (name == "chrome" || name == "chrome-extension" || name == "chrome-untrusted" || name == "devtools" ||
             name == "edge") {
    why = "it is one of the browser's own pages";
  } else {
    why = "the browser opens only web pages";
  }
  return fmt::format("a {}: address ({}); only http:, https: and about:blank may be opened", name, why);
}

std::string refused_browser_call(std::string_view tool, const json::value& arguments) {
  std::string why = refused_in(arguments, "");
  if (why.empty()) return {};
  return fmt::format("{} may not open {}", tool, why);
}

void inline_browser_files(json::value& result, const std::string& folder) {
  json::object* o = result.if_object();
  json::value* c = o ? o->if_contains("content") : nullptr;
  if (!c || !c->is_array()) return;
  json::array* content = &c->as_array();
  std::string real_folder = real(folder);
  for (auto& part : *content) {
    json::object* p = part.if_object();
    if (!p || !p->contains("text") || !p->at("text").is_string()) continue;
    std::string text(p->at("text").as_string());
    if (text.find(folder + "/") == std::string::npos) continue;
    std::string out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (!out.empty()) out += '\n';
      out += inline_line(line, folder, real_folder);
    }
    (*p)["text"] = out;
  }
}

namespace {

bool same_definition(const ConnectorDef& a, const ConnectorDef& b) {
  return a.command == b.command && a.args == b.args && a.env == b.env && a.cwd == b.cwd && a.canonical == b.canonical;
}

}  // namespace

std::chrono::milliseconds spare_idle(const EnvMap& env) {
  return env_milliseconds(env, "OPPX_BROWSER_SPARE_IDLE_MS", std::chrono::minutes(10), 0, 86'400'000);
}

struct BrowserSpare::Impl : std::enable_shared_from_this<BrowserSpare::Impl> {
  explicit Impl(boost::asio::io_context& io) : io(io), idle_timer(io) {}

  boost::asio::io_context& io;
  boost::asio::steady_timer idle_timer;
  std::shared_ptr<Connector> connector;
  std::chrono::milliseconds idle{0};
  int filled = 0;  // spares started so far: the n of spare-<n>.log

  void drop() {
    idle_timer.cancel();
    if (!connector) return;
    connector->on_change(nullptr);
    connector->stop();
    connector.reset();
    changes::changed();  // the spare is off
  }
};

BrowserSpare::BrowserSpare(boost::asio::io_context& io) : impl_(std::make_shared<Impl>(io)) {}

BrowserSpare::~BrowserSpare() { stop(); }

void BrowserSpare::stop() { impl_->drop(); }

std::shared_ptr<Connector> BrowserSpare::take(const ConnectorDef& def) {
  auto& c = impl_->connector;
  if (!c || c->state() != ConnectorState::kRunning || !same_definition(c->def(), def)) return nullptr;
  impl_->idle_timer.cancel();
  c->on_change(nullptr);
  log::info("browser: a session takes the spare server (pid {})", c->pid());
  changes::changed();  // the spare is off: this one is the session's now
  return std::move(c);
}

void BrowserSpare::fill(const ConnectorDef& def, const EnvMap& env) {
  Impl& m = *impl_;
  if (m.connector) {
    if (same_definition(m.connector->def(), def)) return;
    m.drop();  // another browser or server since: the old spare would never be taken
  }
  m.idle = spare_idle(env);
  if (m.idle.count() == 0) return;
  std::string dir = paths::cache_dir() + "/browser";
  if (auto r = ensure_private_dir(dir); !r) return;
  m.connector = Connector::create(m.io, def, fmt::format("{}/spare-{}.log", dir, ++m.filled));
  m.connector->offer_roots({});  // the capability now (initialize); the session's folder once taken
  std::weak_ptr<Impl> weak = impl_;
  std::weak_ptr<Connector> which = m.connector;
  m.connector->on_change([weak, which] {
    auto self = weak.lock();
    auto c = which.lock();
    if (!self || !c || c != self->connector) return;
    changes::changed();  // its state may be another in status_json()
    if (c->state() == ConnectorState::kFailed || c->state() == ConnectorState::kStopped) return self->drop();
    if (c->state() != ConnectorState::kRunning) return;
    // Unused from the moment it is ready.
    self->idle_timer.expires_after(self->idle);
    self->idle_timer.async_wait([weak, which](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->connector != which.lock()) return;
      log::info("browser: the spare server was not used for {} ms; stopping it", self->idle.count());
      self->drop();
    });
  });
  log::info("browser: starting a spare server for the next session (log {})", m.connector->log_path());
  m.connector->start(env, start_timeout(env));
  changes::changed();  // starting
}

proto::BrowserSpareStatus BrowserSpare::status() const {
  const auto& c = impl_->connector;
  if (!c) return {};
  return {c->state() == ConnectorState::kRunning ? "running" : "starting", c->pid(), c->log_path(),
          impl_->idle.count()};
}

SessionBrowser::SessionBrowser(boost::asio::io_context& io, std::string session, BrowserSpare* spare)
    : io_(io), spare_(spare), session_(std::move(session)), folder_(paths::cache_dir() + "/browser/" + session_) {}

SessionBrowser::~SessionBrowser() { stop(); }

void SessionBrowser::start(const EnvMap& env, Started done) {
  if (connector_ && connector_->state() == ConnectorState::kRunning) {
    return boost::asio::post(io_, [done = std::move(done)] { done(std::nullopt); });
  }
  waiting_.push_back(std::move(done));
  if (connector_ && connector_->state() == ConnectorState::kStarting) return;
  if (auto r = ensure_private_dir(folder_); !r) {
    return settle(BrowserProblem{std::string(proto::kind::kConnectorDown),
                                 "cannot make the browser's folder " + folder_ + ": " + r.error(),
                                 {"check the permissions of " + paths::cache_dir()}});
  }
  auto def = browser_definition(env);
  if (!def) return settle(def.error());
  connector_ = spare_ ? spare_->take(*def) : nullptr;
  bool warm = connector_ != nullptr;
  if (!warm) connector_ = Connector::create(io_, *def, folder_ + "/server.log");
  connector_->offer_roots({folder_});
  std::weak_ptr<Connector> weak = connector_;
  connector_->on_change([this, weak] {
    auto c = weak.lock();
    if (!c || c != connector_ || waiting_.empty()) return;
    if (c->state() == ConnectorState::kRunning) return settle(std::nullopt);
    if (c->state() == ConnectorState::kFailed || c->state() == ConnectorState::kStopped)
      settle(BrowserProblem{std::string(proto::kind::kConnectorDown),
                            c->reason().empty() ? "the browser's server stopped" : c->reason(), c->steps()});
  });
  // Once this browser was used (a call ended), the next session's spare starts: not sooner, so
  // that it does not slow this one's start and Chromium's. Later calls find it there (or taken by
  // another session, and then start the next).
  if (spare_) connector_->on_idle([spare = spare_, def = *def, env] { spare->fill(def, env); });
  if (warm) return settle(std::nullopt);
  connector_->start(env, start_timeout(env));
}

void SessionBrowser::settle(std::optional<BrowserProblem> problem) {
  problem_ = problem;
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& w : waiting) {
    boost::asio::post(io_, [w = std::move(w), problem] { w(problem); });
  }
}

void SessionBrowser::stop() {
  if (connector_) {
    connector_->on_change(nullptr);
    connector_->on_idle(nullptr);
    connector_->stop();
  }
  connector_.reset();
  if (!waiting_.empty())
    settle(BrowserProblem{
        std::string(proto::kind::kConnectorDown), "the browser was stopped before it was ready", {"`/browser start`"}});
  problem_.reset();
}

std::string SessionBrowser::state() const {
  if (!connector_) return problem_ ? "failed" : "off";
  switch (connector_->state()) {
    case ConnectorState::kRunning:
      return "running";
    case ConnectorState::kStarting:
      return "starting";
    case ConnectorState::kFailed:
      return "failed";
    default:
      return "off";
  }
}

json::array SessionBrowser::tools() const {
  json::array out;
  if (!connector_) return out;
  note_code_tools(connector_->tools());
  for (const auto& t : connector_->tools()) {
    const json::value* name = t.is_object() ? t.as_object().if_contains("name") : nullptr;
    if (name && name->is_string() && offered_browser_tool(name->as_string())) out.push_back(t);
  }
  return out;
}

proto::SessionBrowserStatus SessionBrowser::status() const {
  proto::SessionBrowserStatus s;
  s.state = state();
  s.folder = folder_;
  s.tools = static_cast<std::int64_t>(tools().size());
  if (connector_) {
    s.pid = connector_->pid();
    s.log = connector_->log_path();
    s.reason = connector_->reason();
  } else {
    s.failed = problem_;
  }
  return s;
}

}  // namespace oppx::daemon
