// diagnose(): the kind decides the steps; the way the connector was added (mcp-remote, a token
// in a header, a command) decides their wording. Matching of login errors is narrow on purpose:
// a false "log in again" sends the user on a chase, while a missed one still gets the log step.
#include "daemon/diagnose.h"

#include "common/text.h"
#include "daemon/connector.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace oppx::daemon {

namespace {

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

// "401" as a number of its own (not "4011" or "v401"), next to a word that makes it an HTTP status.
bool has_status(std::string_view text, std::string_view code) {
  bool near_http = contains(text, "http") || contains(text, "status") || contains(text, "error") ||
                   contains(text, "unauthori") || contains(text, "forbidden");
  for (auto at = text.find(code); near_http && at != std::string_view::npos; at = text.find(code, at + 1)) {
    bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    std::size_t end = at + code.size();
    bool right = end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
    if (left && right) return true;
  }
  return false;
}

std::string basename(std::string_view path) {
  auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// npm's code of a failure, from its "npm error code E404" (npm 10 and later) or "npm ERR! code
// E404" line; empty when the text has none.
std::string_view npm_code(std::string_view text) {
  for (std::string_view prefix : {"npm error code ", "npm ERR! code "}) {
    if (auto at = text.find(prefix); at != std::string_view::npos) {
      std::string_view code = text.substr(at + prefix.size());
      code = code.substr(0, code.find_first_of(" \t\r;:"));
      if (code.size() > 1 && code[0] == 'E') return code;
    }
  }
  return {};
}

// The first ${VAR} (or ${VAR:-default}) in a value: the environment variable it is read from.
std::string variable_in(std::string_view value) {
  auto open = value.find("${");
  auto ref = open == std::string_view::npos ? std::nullopt : reference_at(value, open);
  return ref && variable_name(ref->name) ? std::string(ref->name) : "";
}

// The header that carries the token: Authorization when there is one, else the first whose name
// says it holds a secret (X-Api-Key beside X-Org), else the first.
const std::pair<std::string, std::string>* token_header(const ConnectorDef& def) {
  for (auto& h : def.headers) {
    if (lower(h.first) == "authorization") return &h;
  }
  for (auto& h : def.headers) {
    if (secret_word(h.first)) return &h;
  }
  return def.headers.empty() ? nullptr : &def.headers.front();
}

std::string reconnect(const ConnectorDef& def) { return fmt::format("`oppx mcp reconnect {}`", def.name); }

// One word of a command line for a POSIX shell: as it is when that is safe, else in single quotes.
// `oppx mcp add --force` replaces the whole entry, so a line that changes one thing of an HTTP
// connector repeats the URL and every other header as written. A literal value may be a secret and
// is printed masked, and running a masked line would lose it: then there is no line (empty).
// `url`: the URL to write; `swap`: the header whose value is `swapped` (or nullptr).
std::string add_line(const ConnectorDef& def, std::string_view url, const std::pair<std::string, std::string>* swap,
                     std::string_view swapped) {
  for (auto& other : def.headers) {
    if (&other != swap && mask_value(other.second) != other.second) return "";
  }
  std::string line = fmt::format("oppx mcp add {}{} --url {}", def.name,
                                 file_name_of(def) == ".mcp.json" ? " --project" : "", shell_word(url));
  for (auto& other : def.headers) {
    line +=
        " -H " + shell_word(&other == swap ? std::string(swapped) : fmt::format("{}: {}", other.first, other.second));
  }
  return line;
}

std::string file_or_default(const ConnectorDef& def) { return def.file.empty() ? "your mcp.json" : def.file; }

// The step that saves a new literal token in an HTTP connector's definition: the add line, or,
// when it cannot be written without losing a value (the URL's own secret too), an edit of the file.
// `alternative`: said after the OAuth login step, as the other way in.
std::string new_token_step(const ConnectorDef& def, const std::pair<std::string, std::string>* h,
                           bool alternative = false) {
  const char* no_token = alternative ? "Or, if its service gives you a token instead"
                                     : "It asks for a login but sends no token: get one from its service";
  std::string header = h ? h->first : "Authorization";
  std::string scheme = "Bearer ";
  if (h) {
    auto sp = h->second.find(' ');
    scheme = sp != std::string::npos ? h->second.substr(0, sp + 1) : "";
  }
  std::string token = fmt::format("{}: {}<new token>", header, scheme);
  std::string line = mask_url(def.url) == def.url ? add_line(def, def.url, h, token) : "";
  if (line.empty()) {
    if (!h) {
      return fmt::format("{}, add it as the header Authorization of {} in {}, then run {}.", no_token, def.name,
                         file_or_default(def), reconnect(def));
    }
    return fmt::format(
        "Get a new token and put it in the header {} of {} in {} in place of the old one (edit only "
        "that value; the rest stays as it is), then run {}.",
        header, def.name, file_or_default(def), reconnect(def));
  }
  if (!h) {
    line += " -H " + shell_word(token);
    return fmt::format("{} add it with `{} --force`.",
                       alternative ? "Or, if its service gives you a token instead,"
                                   : "It asks for a login but sends "
                                     "no token: get one from its "
                                     "service and",
                       line);
  }
  return "Get a new token and save it in its definition: `" + line + " --force`.";
}

// A URL the server answers with "no MCP here" (HTTP 404, 405, 410 to initialize): the user's
// definition is wrong, and the way back is the right URL, with the headers kept.
std::vector<std::string> url_steps(const ConnectorDef& def) {
  std::string line = add_line(def, "<right url>", nullptr, "");
  std::string now = mask_url(def.url);
  if (line.empty()) {
    return {fmt::format("Find the server's MCP endpoint (its documentation names it; it often ends in /mcp) and put "
                        "it in \"url\" of {} in {} in place of {} (edit only that value; the rest stays as it is).",
                        def.name, file_or_default(def), now),
            fmt::format("Then run {}.", reconnect(def))};
  }
  return {
      fmt::format("Find the server's MCP endpoint (its documentation names it; it often ends in /mcp) in place "
                  "of {}, and save it: `{} --force`{}.",
                  now, line, def.headers.empty() ? "" : " (its headers as they are written)")};
}

std::vector<std::string> login_steps(const ConnectorDef& def, std::string_view log_path) {
  if (uses_mcp_remote(def)) {
    return {fmt::format("Run {}: it opens the login page in your browser and waits 3 minutes for you to log in.",
                        reconnect(def)),
            fmt::format("If that fails, delete the saved logins of mcp-remote (`rm -rf ~/.mcp-auth`) and run {} "
                        "again.",
                        reconnect(def))};
  }
  if (def.kind == ConnectorDef::Kind::kHttp) {
    const auto* h = token_header(def);
    if (std::string var = h ? variable_in(h->second) : ""; !var.empty()) {
      // The definition stays as it is: nothing in it is lost, and the variable is read at each start.
      return {
          fmt::format("Its token is read from the environment variable {} (header {}): put a new token in {} "
                      "in the shell you run oppx from, then run {} from that shell.",
                      var, h->first, var, reconnect(def))};
    }
    if (logs_in_with_oauth(def)) {
      return {fmt::format("Log in: run `oppx mcp login {0}` (in the chat: /mcp auth {0}); it opens the server's "
                          "login page in your browser and waits 3 minutes for you to log in.",
                          def.name),
              new_token_step(def, h, true)};
    }
    return {new_token_step(def, h)};
  }
  std::vector<std::string> steps;
  for (auto& [key, value] : def.env) {
    if (std::string var = variable_in(value); !var.empty() && lower(key).find("token") != std::string::npos) {
      steps.push_back(
          fmt::format("Its token is read from the environment variable {} (env {}): put a new token in "
                      "{} in the shell you run oppx from.",
                      var, key, var));
      break;
    }
  }
  steps.push_back(fmt::format("Run {}; if it still fails, its log says more: {}", reconnect(def), log_path));
  return steps;
}

std::string install_step(const ConnectorDef& def, std::string_view message) {
  std::string program = basename(def.command);
  if (auto code = npm_code(message); code == "E404" || code == "ETARGET")
    return fmt::format(
        "Correct the package name (or version) in the command of {} in {}: the registry has no such package.", def.name,
        file_or_default(def));
  if (says_script_missing(message, def))
    return fmt::format(
        "{} runs, but cannot find the script or module it was given: install it, or correct the "
        "command of {} in {}.",
        program, def.name, file_or_default(def));
  if (program == "node" || program == "npx" || program == "npm" || program == "pnpm" || program == "yarn")
    return "Install Node.js 18 or newer (it brings node and npx): https://nodejs.org or your package manager.";
  if (program == "uvx" || program == "uv")
    return "Install uv (it brings uvx): `curl -LsSf https://astral.sh/uv/install.sh | sh`, or see "
           "https://docs.astral.sh/uv/.";
  if (program == "python" || program == "python3") return "Install Python 3 (it brings " + program + ").";
  if (program == "docker") return "Install Docker and start it.";
  return fmt::format("Install {}, or correct the command of {} in {}.", program, def.name, file_or_default(def));
}

std::string_view trimmed(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// "    at Module._load (node:internal/…)", "  File \"x.py\", line 3": where, not what.
bool stack_frame(std::string_view t) { return t.starts_with("at ") || t.starts_with("File \""); }

bool version_banner(std::string_view t) {
  return t.starts_with("Node.js v") && t.size() > 9 && std::isdigit(static_cast<unsigned char>(t[9]));
}

// Lines that point elsewhere rather than say what happened: npm's "A complete log of this run can
// be found in: …", httpx's "For more information check: …", node's "(Use `node --trace-warnings …`".
bool notice(std::string_view t) {
  for (std::string_view w :
       {"complete log of this run", "For more information", "--trace-warnings", "--trace-uncaught", "npm notice"}) {
    if (contains(t, w)) return true;
  }
  return false;
}

// The exception line of Python's last traceback: the first line after "Traceback (most recent call
// last):" that starts where that line does (frames and source lines are indented further; an
// exception group draws "|" before both). A traceback printed after "Exception ignored in: …" is
// the interpreter's noise at shutdown ("RuntimeError: Event loop is closed"), not the reason.
std::string python_exception(const std::deque<std::string>& lines) {
  constexpr std::string_view kMarker = "Traceback (most recent call last):";
  std::string found;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    auto at = l.find(kMarker);
    if (at == std::string_view::npos || (i > 0 && contains(lines[i - 1], "Exception ignored in"))) continue;
    for (std::size_t j = i + 1; j < lines.size(); ++j) {
      std::string_view e = lines[j];
      if (e.size() > at && e[at] != ' ' && e.substr(0, at) == l.substr(0, at)) {
        found = std::string(trimmed(e.substr(at)));
        break;
      }
    }
  }
  return found;
}

// mcp-remote's own words when its login failed: after a 401 ("Authentication required"), a
// refused client registration, an OAuth error answer; or an HTTP 401/403 it names.
bool mcp_remote_login_failed(std::string_view line) {
  for (std::string_view w :
       {"Authentication required", "Authorization error", "RegistrationRejectedError", "Dynamic Client Registration",
        "dynamic client registration", "invalid_client", "invalid_grant", "UnauthorizedError"}) {
    if (contains(line, w)) return true;
  }
  return looks_like_login(line);
}

bool reads_like_error(std::string_view t) {
  for (std::string_view w : {"Error", "error:", "ERROR", "Cannot", "cannot", "can't", "not found", "No such file",
                             "ENOENT", "EACCES", "denied", "Traceback", "Exception", "panic", "fatal", "Fatal"}) {
    if (contains(t, w)) return true;
  }
  return false;
}

}  // namespace

std::string telling_line(const std::deque<std::string>& lines, bool errors_only) {
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (!npm_code(*it).empty()) return std::string(trimmed(*it));
  }
  if (std::string e = python_exception(lines); !e.empty()) return e;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string_view t = trimmed(*it);
    if (!stack_frame(t) && !notice(t) && reads_like_error(t)) return std::string(t);
  }
  if (errors_only) return "";
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string_view t = trimmed(*it);
    // "}" and "^" under a source line say nothing on their own.
    bool words = std::any_of(t.begin(), t.end(), [](unsigned char c) { return std::isalnum(c); });
    if (words && !stack_frame(t) && !version_banner(t) && !notice(t)) return std::string(t);
  }
  return "";
}

StderrReading read_stderr_lines(const std::deque<std::string>& lines, const ConnectorDef& def, bool errors_only) {
  StderrReading w{telling_line(lines, errors_only), {}, {}};
  std::string_view code = npm_code(w.line);
  if (code == "E404") {
    w.kind = proto::kind::kNotInstalled;
    w.meaning = "the package does not exist on the registry: check its name";
  } else if (code == "ETARGET") {
    w.kind = proto::kind::kNotInstalled;
    w.meaning = "the registry has no version of the package that matches: check its version";
  } else if (says_script_missing(w.line, def)) {
    w.kind = proto::kind::kNotInstalled;
  } else if (uses_mcp_remote(def) &&
             std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return mcp_remote_login_failed(l); })) {
    w.kind = proto::kind::kLogin;
  }
  return w;
}

bool says_script_missing(std::string_view message, const ConnectorDef& def) {
  for (std::string_view w :
       {"Cannot find module", "Cannot find package", "can't open file", "ModuleNotFoundError", "No module named"}) {
    if (contains(message, w)) return true;
  }
  // A shell or interpreter naming the file it was given: "bash: /x.sh: No such file or directory".
  // A server's own "No such file" (a config file it reads) names no program first.
  std::string program = basename(def.command);
  return !program.empty() && contains(message, "No such file or directory") &&
         (message.starts_with(program + ": ") || contains(message, ": " + program + ": "));
}

bool tool_error_looks_like_login(std::string_view message) {
  std::string m = lower(message);
  for (std::string_view phrase : {"unauthorized", "unauthorised", "token expired", "token has expired", "expired token",
                                  "invalid_token", "invalid token", "token is expired"}) {
    if (contains(m, phrase)) return true;
  }
  return false;
}

bool looks_like_login(std::string_view message, int http_status) {
  if (http_status == 401 || http_status == 403) return true;
  if (tool_error_looks_like_login(message)) return true;
  std::string m = lower(message);
  return has_status(m, "401") || has_status(m, "403");
}

bool uses_mcp_remote(const ConnectorDef& def) {
  if (contains(def.command, "mcp-remote")) return true;
  return std::any_of(def.args.begin(), def.args.end(), [](const std::string& a) { return contains(a, "mcp-remote"); });
}

bool url_is_wrong(int http_status) { return http_status == 404 || http_status == 405 || http_status == 410; }

Diagnosis diagnose(std::string_view kind, std::string_view message, const ConnectorDef& def, std::string_view log_path,
                   int http_status) {
  Diagnosis d{std::string(kind), std::string(message), {}};
  bool http = def.kind == ConnectorDef::Kind::kHttp;
  // mcp-remote waits silently for a login in the browser: not answering is how a lost login looks.
  if (kind == proto::kind::kTimeout && uses_mcp_remote(def)) {
    d.kind = proto::kind::kLogin;
    d.reason = fmt::format("it needs a new login (mcp-remote waits for a login in the browser): {}", message);
  } else if ((kind == proto::kind::kStopped || kind == proto::kind::kUnreachable) && looks_like_login(message)) {
    d.kind = proto::kind::kLogin;
    d.reason = fmt::format("it needs a new login: {}", message);
  } else if (kind == proto::kind::kLogin && !contains(lower(message), "login")) {
    d.reason = fmt::format("it needs a new login: {}", message);
  }
  // An HTTP connector has no program and so no log of its own: the daemon logs what went wrong
  // with it (the failure, redirects, resumed streams) in its own log.
  std::string log_step =
      http ? fmt::format("Look at the daemon's log for why (its lines with `connector {}:`): {}", def.name, log_path)
           : fmt::format("Look at its log for why: {}", log_path);
  if (d.kind == proto::kind::kLogin) {
    d.steps = login_steps(def, log_path);
  } else if (d.kind == proto::kind::kNotInstalled) {
    d.steps = {install_step(def, message), fmt::format("Then run {}.", reconnect(def))};
  } else if (d.kind == proto::kind::kTimeout && http) {
    // Two limits end an HTTP start: the start's own (30 s) and the HTTP exchange's; each has its variable.
    bool start_limit = contains(message, "did not finish starting");
    d.steps = {fmt::format("Check that the server is up and that {} is its MCP endpoint; a slow one can be given "
                           "longer with {} in the shell you run oppx from.",
                           mask_url(def.url),
                           start_limit ? "OPPX_MCP_START_TIMEOUT_MS (milliseconds)"
                                       : "OPPX_HTTP_TIMEOUTS (connect=, headers=, idle=, total=, in milliseconds)"),
               fmt::format("Then run {}.", reconnect(def))};
  } else if (d.kind == proto::kind::kTimeout) {
    d.steps = {fmt::format("Run {} (a first start can be slow while npx or uvx downloads it).", reconnect(def)),
               "If it still does not answer, " + lower(log_step.substr(0, 1)) + log_step.substr(1)};
  } else if (d.kind == proto::kind::kUnreachable) {
    d.steps = {fmt::format("Check that {} is right and reachable from here (network, VPN, the server is up).",
                           def.url.empty() ? "its address" : mask_url(def.url)),
               fmt::format("Then run {}.", reconnect(def))};
  } else if (d.kind == proto::kind::kConfig && http && url_is_wrong(http_status)) {
    d.steps = url_steps(def);
  } else if (d.kind == proto::kind::kConfig) {
    d.steps = {fmt::format("Correct what the reason names ({}, or a variable in the shell you run oppx from).",
                           file_or_default(def)),
               fmt::format("Then run {}.", reconnect(def))};
  } else if (d.kind == proto::kind::kUnsupported) {
    d.steps = {"This build of oppx cannot run it; update oppx (`oppx --version` shows yours).", log_step};
  } else {
    d.steps = {log_step, fmt::format("Run {} to start it again.", reconnect(def))};
  }
  return d;
}

}  // namespace oppx::daemon
