// oppx mcp login|logout. The daemon does the OAuth work (discovery, registration, the code
// redeemed, the tokens kept); this command shows the URL, opens the browser, and waits, reading
// a pasted address on a terminal meanwhile: the wait runs on a thread of its own, the paste is
// sent on a second connection.
#include "cli/mcp_login.h"

#include "cli/daemon_client.h"
#include "cli/line_editor.h"
#include "cli/output.h"
#include "common/text.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"

#include <boost/json.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <atomic>
#include <fcntl.h>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace oppx::cli {

namespace json = boost::json;

namespace {

// The answer to the login's wait arrives within its own limit (the daemon's, 180 s) and a margin.
constexpr auto kWaitMargin = std::chrono::seconds(30);

}  // namespace

bool found_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    auto colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  return false;
}

std::string open_browser(const std::string& url) {
  std::string command, said;
  if (const char* b = std::getenv("BROWSER"); b && *b) {
    command = b;
    said = "with $BROWSER";
  } else if ((std::getenv("DISPLAY") || std::getenv("WAYLAND_DISPLAY")) && found_on_path("xdg-open")) {
    command = "xdg-open";
    said = "with xdg-open";
  } else {
    return "";
  }
  std::string script = "exec " + command + " \"$1\"";
  const char* argv[] = {"sh", "-c", script.c_str(), "sh", url.c_str(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);  // the paste is ours to read
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return "";
  std::thread([pid] {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }).detach();
  return said;
}

namespace {

// " until 14:05", or " until 7 Dec 14:05" when that is not today; empty when the server did not say.
std::string until_text(std::int64_t expires_at) {
  if (!expires_at) return "";
  std::time_t t = static_cast<std::time_t>(expires_at), now = std::time(nullptr);
  std::tm local{}, today{};
  ::localtime_r(&t, &local);
  ::localtime_r(&now, &today);
  if (local.tm_yday == today.tm_yday && local.tm_year == today.tm_year) return fmt::format(" until {:%H:%M}", local);
  return fmt::format(" until {} {:%b %H:%M}", local.tm_mday, local);
}

// The connector as the login left it; 0 when it runs.
int show_after(const std::string& name, const json::value& v, std::FILE* say) {
  auto list = proto::decode<proto::McpListResult>(v);
  if (!list) return unreadable_answer(list.error());
  for (auto& c : list->connectors) {
    if (c.name != name || c.state == "hidden") continue;
    std::string login;
    if (c.login && c.login->logged_in)
      login = fmt::format("Logged in to {}{}{}.", name, until_text(c.login->expires_at),
                          c.login->refreshes ? ", renewed automatically" : "");
    else
      login = fmt::format("Logged in to {}.", name);
    fmt::print(say, "{}\n", login);
    if (c.state == "running") {
      fmt::print(say, "{} is running: {} tool{}.\n", name, c.tool_count, c.tool_count == 1 ? "" : "s");
      return kExitOk;
    }
    if (c.state == "login")
      fmt::print(say, "{} still needs a login: {}\n", name, c.reason);
    else
      fmt::print(say, "{} is {}: {}\n", name, c.state, c.reason);
    int n = 0;
    for (auto& s : c.steps) fmt::print(say, "  {}. {}\n", ++n, s);
    return kExitFailed;
  }
  fmt::print(say, "Logged in to {}.\n", name);
  return kExitOk;
}

// The wait, on a thread, so that the main thread can read a pasted address meanwhile. Shared with
// that thread, which may outlive a wait the user stopped (Ctrl-C in the chat).
struct LoginWait {
  std::optional<Connection> conn;
  std::atomic<bool> done{false};
  boost::system::result<json::value, proto::RpcError> answer{json::value()};
  int wake[2] = {-1, -1};
  ~LoginWait() {
    for (int fd : wake) {
      if (fd >= 0) ::close(fd);
    }
  }
};

// A pasted address, sent to the daemon on a connection of its own; false when it was not taken.
void send_paste(const std::string& socket, const std::string& login, std::string pasted) {
  pasted.erase(0, pasted.find_first_not_of(" \t\r"));
  pasted.erase(pasted.find_last_not_of(" \t\r") + 1);
  if (pasted.empty()) return;
  auto other = connect_daemon(socket, Start::kNever);
  if (!other) {
    fmt::print(stderr, "oppx: {}\n", other.error().message);
    return;
  }
  auto r = other->client.call(proto::kMcpLoginRedirect, json::value_from(proto::McpLoginRedirectParams{login, pasted}),
                              kCallTimeout);
  if (!r) fmt::print(stderr, "oppx: that address was not taken: {}\n", r.error().message);
}

// Reads pasted lines from stdin until the wait ends (or stdin does).
void paste_from_stdin(const std::string& socket, const std::string& login, LoginWait& w) {
  std::string line;
  while (!w.done) {
    pollfd fds[2] = {{0, POLLIN, 0}, {w.wake[0], POLLIN, 0}};
    if (::poll(fds, w.wake[0] >= 0 ? 2 : 1, -1) < 0) continue;
    if (!(fds[0].revents & (POLLIN | POLLHUP))) continue;
    char buf[4096];
    ssize_t n = ::read(0, buf, sizeof buf);
    if (n <= 0) return;  // the terminal closed: the browser's redirect may still come
    line.append(buf, static_cast<std::size_t>(n));
    for (auto nl = line.find('\n'); nl != std::string::npos; nl = line.find('\n')) {
      send_paste(socket, login, line.substr(0, nl));
      line.erase(0, nl + 1);
    }
  }
}

// The same from the chat's keyboard (a terminal in raw mode: the keys echoed here, Enter ends the
// line); false when the user pressed Ctrl-C.
bool paste_from_keys(const std::string& socket, const std::string& login, LoginWait& w, const ReadKey& keys) {
  std::string line;
  while (!w.done) {
    std::string k = keys(100);
    if (k == LineEditor::kEndOfInput) return true;  // the terminal closed: the browser's redirect may still come
    if (k.empty() || k[0] == '\x1b') continue;      // a key of no use here, or a paste's bracket
    for (char c : k) {
      if (c == '\x03') return false;
      if (c == '\r' || c == '\n') {
        std::fputs("\n", stdout);
        send_paste(socket, login, std::exchange(line, {}));
      } else if ((c == '\x7f' || c == '\b') && !line.empty()) {
        line.pop_back();
        std::fputs("\b \b", stdout);
      } else if (static_cast<unsigned char>(c) >= 0x20 && c != '\x7f') {
        line += c;
        std::fputc(c, stdout);
      }
    }
    std::fflush(stdout);
  }
  return true;
}

}  // namespace

int login_flow(Context& ctx, const std::string& name, bool as_json, std::FILE* say, const ReadKey* keys) {
  auto w = std::make_shared<LoginWait>();
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  w->conn.emplace(std::move(*conn));
  auto started =
      w->conn->client.call(proto::kMcpLogin, json::value_from(proto::McpLoginParams{name, ""}), kCallTimeout * 6);
  if (!started) {
    fmt::print(stderr, "oppx: cannot log in to {}: {}\n", name, started.error().message);
    if (as_json) fmt::print("{}", json_line(json::object{{"error", started.error().to_json()}}));
    return kExitFailed;
  }
  auto s = proto::decode<proto::McpLoginStart>(*started);
  if (!s) return unreadable_answer(s.error());
  if (as_json) say = stderr;  // stdout is the answer's
  fmt::print(say, "Log in to {} at {} in your browser:\n  {}\n", name, escape_controls(s->issuer),
             escape_controls(s->url));
  std::string opened = open_browser(s->url);
  bool paste = keys || ::isatty(0) == 1;
  fmt::print(say, "{}Waiting up to {} for the login{}.\n", opened.empty() ? "" : "Opened " + opened + ". ",
             s->expires_in >= 120 ? fmt::format("{} minutes", s->expires_in / 60) : fmt::format("{} s", s->expires_in),
             paste ? fmt::format("; if the browser is on another machine, paste here the address it was sent to "
                                 "(it starts with {}){}",
                                 s->redirect_uri, keys ? ", or press Ctrl-C to stop waiting" : "")
                   : "");
  std::fflush(say);

  if (::pipe(w->wake) != 0) w->wake[0] = w->wake[1] = -1;
  auto limit = std::chrono::seconds(s->expires_in) + kWaitMargin;
  std::thread waiter([w, login = s->login, limit] {
    w->answer = w->conn->client.call(proto::kMcpLoginWait, json::value_from(proto::McpLoginWaitParams{login}), limit);
    w->done = true;
    if (w->wake[1] >= 0) (void)!::write(w->wake[1], "x", 1);
  });
  if (keys && !paste_from_keys(ctx.socket, s->login, *w, *keys)) {
    // The wait goes on in the daemon until its limit; the thread ends with it, on its own.
    waiter.detach();
    fmt::print(say, "Stopped waiting for the login of {}; `oppx mcp login {}` starts another.\n", name, name);
    return kExitFailed;
  }
  if (!keys && paste) paste_from_stdin(ctx.socket, s->login, *w);
  waiter.join();
  if (!w->answer) {
    fmt::print(stderr, "oppx: the login of {} failed: {}\n", name, w->answer.error().message);
    if (as_json) fmt::print("{}", json_line(json::object{{"error", w->answer.error().to_json()}}));
    return kExitFailed;
  }
  if (as_json) {
    fmt::print("{}", json_line(*w->answer));
    return kExitOk;
  }
  return show_after(name, *w->answer, say);
}

std::string login_text(const proto::LoginState& l) {
  if (!l.logged_in) return "not logged in";
  std::string out = "logged in";
  if (!l.issuer.empty()) out += " at " + escape_controls(l.issuer);
  out += until_text(l.expires_at);
  if (l.refreshes) out += ", renewed automatically";
  if (!l.scope.empty()) out += " (scope: " + escape_controls(l.scope) + ")";
  return out;
}

int mcp_login(Context& ctx) {
  const Command& self = *find_command("mcp", "login");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  return login_flow(ctx, ctx.args[0], as_json);
}

int mcp_logout(Context& ctx) {
  const Command& self = *find_command("mcp", "logout");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  auto r = conn->client.call(proto::kMcpLogout, json::value_from(proto::McpLoginParams{ctx.args[0], ""}), kCallTimeout);
  if (!r) {
    fmt::print(stderr, "oppx: {}\n", r.error().message);
    if (as_json) fmt::print("{}", json_line(json::object{{"error", r.error().to_json()}}));
    return kExitFailed;
  }
  if (as_json) {
    fmt::print("{}", json_line(*r));
    return kExitOk;
  }
  auto out = proto::decode<proto::McpLogoutResult>(*r);
  if (!out) return unreadable_answer(out.error());
  if (out->forgotten == 0)
    fmt::print("{} was not logged in; nothing to forget.\n", out->name);
  else
    fmt::print("Logged out of {}: its tokens are forgotten. `oppx mcp login {}` logs in again.\n", out->name,
               out->name);
  return kExitOk;
}

}  // namespace oppx::cli
