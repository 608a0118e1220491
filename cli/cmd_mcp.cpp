// oppx mcp list|get|tools|call|reconnect: the daemon's connectors, as a user and a script see
// them. Every listing has --json (the daemon's reply as it is); values of headers and env come
// masked from the daemon already. Text from servers and files is printed as it is: the filter of
// cli/output.h escapes it on the way to the terminal.
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/mcp_login.h"
#include "cli/elicit_form.h"
#include "cli/output.h"
#include "cli/probe.h"
#include "proto/elicitation.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"
#include "common/tool_text.h"
#include "common/text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include <unistd.h>

namespace oppx::cli {

namespace json = boost::json;

namespace {

constexpr std::chrono::milliseconds kMcpTimeout{60'000};
// `oppx mcp reconnect <name>` waits for the daemon's LOGIN_TIMEOUT (180 s) and a little more.
constexpr std::chrono::milliseconds kReconnectTimeout{200'000};

void print_steps(std::FILE* to, const std::vector<std::string>& steps, std::string_view indent) {
  int n = 0;
  for (auto& s : steps) fmt::print(to, "{}{}. {}\n", indent, ++n, s);
}

using NoteHandler = std::function<void(const std::string& method, const json::value& params)>;

using Show = std::function<int(const json::value&)>;

// On a terminal, while a start or a reconnect is waited for (up to minutes for a login): one dim
// line that says what and for how long, redrawn each second from the second one (as the chat's
// spinner is), and erased before the answer is printed.
class Waiting {
 public:
  explicit Waiting(std::string what) : what_(std::move(what)) {
    if (::isatty(1) != 1) return;
    thread_ = std::thread([this] { tick(); });
  }
  ~Waiting() {
    {
      std::lock_guard lock(m_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void tick() {
    auto started = std::chrono::steady_clock::now();
    std::unique_lock lock(m_);
    bool drawn = false;
    for (int seconds = 1; !cv_.wait_until(lock, started + std::chrono::seconds(seconds), [this] { return done_; });
         ++seconds) {
      write_styled(spinner_draw(fmt::format("  {}… {} s", what_, seconds)));
      drawn = true;
    }
    if (drawn) write_styled(spinner_erase());
  }
  std::string what_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// What a method that starts connectors waits for, in words; "" for the others.
std::string waited_for(std::string_view method, const json::object& params) {
  std::string name;
  if (const json::value* n = params.if_contains("name"); n && n->is_string()) name = escape_controls(n->get_string());
  if (method == proto::kMcpAdd) return "starting " + name;
  if (method == proto::kMcpReconnect) return name.empty() ? "reconnecting every connector" : "reconnecting " + name;
  return {};
}

// Runs one method; prints --json or hands the result to `show`. Notifications go to `on_note`.
// With --json the exit status is `json_status`'s (the same as the text's, where it varies).
// `complete` adds to a result what the client asks elsewhere (the probe's share), before either is printed.
// `intercept` sees an error first: when it returns an exit status, nothing is printed.
using Intercept = std::function<std::optional<int>(const proto::RpcError&)>;
int run(Context& ctx, const Command& self, std::string_view method, json::object params, bool as_json, const Show& show,
        NoteHandler on_note = {}, std::chrono::milliseconds timeout = kMcpTimeout, const Show& json_status = {},
        const std::function<void(json::value&)>& complete = {}, const Intercept& intercept = {},
        const SyncClient::RequestHandler& on_request = {}) {
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  conn->client.on_notification(std::move(on_note));
  conn->client.on_request(on_request);
  std::optional<Waiting> waiting;
  if (std::string what = waited_for(method, params); !what.empty() && !as_json) waiting.emplace(std::move(what));
  auto r = conn->client.call(method, params, timeout);
  waiting.reset();
  if (r && complete) complete(*r);
  if (!r && intercept) {
    if (auto handled = intercept(r.error())) return *handled;
  }
  if (!r) {
    fmt::print(stderr, "oppx: {}\n", r.error().message);
    // A connector that is down says why and what to do (data.reason, data.steps).
    if (auto down = proto::decode<proto::ConnectorDown>(r.error().data);
        down && r.error().kind == proto::kind::kConnectorDown)
      print_steps(stderr, down->steps, "  ");
    // A script asked for JSON: it gets the error as JSON too (kind, reason, steps), on stdout.
    if (as_json) fmt::print("{}", json_line(json::object{{"error", r.error().to_json()}}));
    // A definition that cannot be used is the caller's argument; a name that matches no
    // connector is a command that failed (as in `claude mcp`).
    if (r.error().kind == proto::kind::kInvalidDefinition) return kExitUsage;
    return kExitFailed;
  }
  (void)self;
  if (as_json) {
    fmt::print("{}", json_line(*r));
    return json_status ? json_status(*r) : kExitOk;
  }
  return show(*r);
}

// A `show` of the method's result struct T: the reply decoded first (proto/decode.h).
template <class T>
Show typed(std::function<int(const T&)> show) {
  return [show = std::move(show)](const json::value& v) {
    auto r = proto::decode<T>(v);
    return r ? show(*r) : unreadable_answer(r.error());
  };
}

std::string what_runs(const proto::ConnectorEntry& c) {
  if (c.type == "http") return c.url;
  std::string what = shell_word(c.command);
  for (auto& arg : c.args) what += " " + shell_word(arg);
  return what;
}

std::string pairs(const proto::StringMap& m, std::string_view sep) {
  std::string out;
  for (auto& [k, v] : m) out += (out.empty() ? "" : ", ") + k + std::string(sep) + v;
  return out;
}

std::string reads(const proto::ConnectorEntry& c) {
  std::string out;
  for (auto& v : c.reads) out += (out.empty() ? "${" : ", ${") + v + "}";
  return out;
}

// The files of the repository it runs ("files" of a repository's connector), by path.
std::string runs(const proto::ConnectorEntry& c) {
  std::string out;
  for (auto& f : c.files) out += (out.empty() ? "" : ", ") + f.path;
  return out;
}

void print_details(const proto::ConnectorEntry& c) {
  if (c.is_project() && !c.approve.empty()) {
    // What the user is asked to approve, in full: environment and headers (values masked), the
    // variables it reads from the environment of the oppx command that starts it, and the files
    // of the repository it runs.
    if (!c.cwd.empty()) fmt::print("    cwd: {}\n", escape_controls(c.cwd));
    if (std::string e = pairs(c.env, "="); !e.empty()) fmt::print("    env: {}\n", e);
    if (std::string h = pairs(c.headers, ": "); !h.empty()) fmt::print("    headers: {}\n", h);
    if (std::string r = reads(c); !r.empty()) fmt::print("    reads: {}\n", r);
    if (std::string r = runs(c); !r.empty()) fmt::print("    runs: {}\n", r);
  }
  if (c.login && c.login->logged_in) fmt::print("    {}\n", login_text(*c.login));
  if (c.state == "idle")
    fmt::print("    not running: lazy, it starts at its first call; its tools are those of its last run\n");
  if (!c.reason.empty()) fmt::print("    {}\n", c.reason);
  print_steps(stdout, c.steps, "    ");
}

// The connectors, one row each in columns (name, state, tools, what runs), each followed by what
// is worth saying about it.
void print_entries(const std::vector<const proto::ConnectorEntry*>& list) {
  std::vector<std::string> counts;
  for (const auto* c : list) counts.push_back(std::to_string(c->tool_count));
  counts = right_aligned(std::move(counts));
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const proto::ConnectorEntry& c = *list[i];
    // A name oppx cannot use is listed as written (escaped first: the columns count what shows).
    std::string name = escape_controls(c.name) + (c.is_project() ? " [repo]" : "");
    std::string tools = counts[i] + (c.tool_count == 1 ? " tool" : " tools") + (c.cached ? " (last run)" : "");
    rows.push_back({name, escape_controls(c.state), tools, escape_controls(what_runs(c))});
  }
  std::vector<std::string> lines = columns(rows);
  for (std::size_t i = 0; i < list.size(); ++i) {
    fmt::print("{}\n", lines[i]);
    print_details(*list[i]);
  }
}

void print_definition(const proto::ConnectorEntry& c, bool with_reason = true) {
  fmt::print("{} ({} connector, from {})\n", c.name, c.is_project() ? "repository" : "your own", c.file);
  fmt::print("  state:    {}\n", c.state);
  if (c.type == "http") {
    fmt::print("  url:      {}\n", c.url);
    if (std::string h = pairs(c.headers, ": "); !h.empty()) fmt::print("  headers:  {}\n", h);
    if (c.login) fmt::print("  login:    {}\n", login_text(*c.login));
  } else {
    fmt::print("  command:  {}\n", what_runs(c));
    if (!c.cwd.empty()) fmt::print("  cwd:      {}\n", escape_controls(c.cwd));
    if (std::string e = pairs(c.env, "="); !e.empty()) fmt::print("  env:      {}\n", e);
  }
  if (std::string r = reads(c); !r.empty())
    fmt::print("  reads:    {} (from the environment of the oppx command)\n", r);
  if (c.state == "running" || c.state == "idle")
    fmt::print("  tools:    {}{}\n", c.tool_count,
               c.state == "idle" ? " (of its last run; lazy: its first call starts it)" : "");
  if (!c.protocol.empty()) fmt::print("  protocol: MCP {}\n", escape_controls(c.protocol));
  if (c.is_project()) {
    fmt::print("  root:     {}\n", c.root);
    fmt::print("  sha256:   {}\n", c.sha256);
    // The files of the repository it runs: the consent holds for them as they are.
    std::string_view label = "  runs:     ";
    for (auto& f : c.files) {
      fmt::print("{}{} (sha256 {})\n", label, f.path, f.sha256);
      label = "            ";
    }
    fmt::print("  consent:  {}\n", c.consent);
  }
  if (with_reason && !c.reason.empty()) {
    fmt::print("  reason:   {}\n", c.reason);
    print_steps(stdout, c.steps, "    ");
  }
  if (!c.log.empty()) fmt::print("  log:      {}\n", c.log);
}

void print_list_notes(const proto::McpListResult& l) {
  for (auto& w : l.warnings) fmt::print(stderr, "oppx: warning: {}\n", w);
  if (!l.error.empty()) fmt::print(stderr, "oppx: {}\n", l.error);
  if (!l.consent_error.empty()) fmt::print(stderr, "oppx: {}\n", l.consent_error);
  if (l.project) {
    for (auto& w : l.project->warnings) fmt::print(stderr, "oppx: warning: {}\n", w);
    if (!l.project->error.empty()) fmt::print(stderr, "oppx: {}\n", l.project->error);
  }
}

int list(Context& ctx) {
  const Command& self = *find_command("mcp", "list");
  bool as_json = take_flag(ctx.args, "--json");
  if (!ctx.args.empty()) return usage_error(self, "unexpected argument " + ctx.args[0]);
  return run(ctx, self, proto::kMcpList, {}, as_json, typed<proto::McpListResult>([](const proto::McpListResult& l) {
               print_list_notes(l);
               if (l.connectors.empty()) {
                 fmt::print("No connectors in {}", l.config);
                 if (l.project) fmt::print(" or {}", l.project->config);
                 fmt::print(".\n");
                 return kExitOk;
               }
               std::vector<const proto::ConnectorEntry*> all;
               for (auto& c : l.connectors) all.push_back(&c);
               print_entries(all);
               return kExitOk;
             }));
}

int get(Context& ctx) {
  const Command& self = *find_command("mcp", "get");
  bool as_json = take_flag(ctx.args, "--json");
  bool show_values = take_flag(ctx.args, "--show-values");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  json::object params = json::value_from(proto::McpGetParams{ctx.args[0], "", show_values}).as_object();
  return run(ctx, self, proto::kMcpGet, std::move(params), as_json,
             typed<proto::ConnectorEntry>([](const proto::ConnectorEntry& c) {
               print_definition(c);
               if (c.hides) {
                 fmt::print("\nIt hides the repository's connector of the same name:\n");
                 print_definition(*c.hides);
               }
               return kExitOk;
             }));
}

// approve / deny: show the definition as the daemon has it, then decide on exactly that one (its
// sha256): a file changed in between is refused by the daemon, never approved unseen.
int decide(Context& ctx, std::string_view command, bool approve) {
  const Command& self = *find_command("mcp", command);
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  auto conn = connect_daemon(ctx.socket, Start::kIfNeeded);
  if (!conn) {
    fmt::print(stderr, "oppx: {}\n", conn.error().message);
    return conn.error().exit_code;
  }
  auto got = conn->client.call(proto::kMcpGet, json::value_from(proto::McpGetParams{ctx.args[0]}), kMcpTimeout);
  if (!got) {
    fmt::print(stderr, "oppx: {}\n", got.error().message);
    if (as_json) fmt::print("{}", json_line(json::object{{"error", got.error().to_json()}}));
    return kExitFailed;
  }
  auto shown = proto::decode<proto::ConnectorEntry>(*got);
  if (!shown) return unreadable_answer(shown.error());
  proto::ConnectorEntry def = *shown;
  if (!def.is_project()) {
    if (!def.hides) {
      fmt::print(stderr, "oppx: {} is your own connector (from {}); only a repository's connectors need approval\n",
                 ctx.args[0], def.file);
      return kExitUsage;
    }
    def = *def.hides;
  }
  // Decided on the sha256 of what `def` shows, and of the files it runs; printed once the daemon
  // took it (a hidden or changed definition, or a file changed since, is refused, and then nothing
  // was approved to show).
  proto::ConsentParams params{.name = ctx.args[0], .sha256 = def.sha256, .files = proto::StringMap{}};
  for (auto& f : def.files) (*params.files)[f.path] = f.sha256;
  auto r =
      conn->client.call(approve ? proto::kConsentApprove : proto::kConsentDeny, json::value_from(params), kMcpTimeout);
  if (!r) {
    fmt::print(stderr, "oppx: {}\n", r.error().message);
    if (as_json) fmt::print("{}", json_line(json::object{{"error", r.error().to_json()}}));
    return kExitFailed;
  }
  // The answer is the connector as it is now; a hidden repository's one is under `hides`.
  auto decided = proto::decode<proto::ConnectorEntry>(*r);
  if (!decided) return unreadable_answer(decided.error());
  proto::ConnectorEntry now = decided->hides ? *decided->hides : *decided;
  int rc = approve && now.state != "running" ? kExitFailed : kExitOk;
  if (as_json) {
    fmt::print("{}", json_line(*r));
    return rc;
  }
  fmt::print("{} this definition:\n", approve ? "Approved" : "Denied");
  print_definition(now, false);
  fmt::print("\n");
  if (now.state == "hidden") {
    fmt::print("{} stays off while your own connector of that name exists (remove or rename yours first).\n",
               ctx.args[0]);
  } else if (!approve) {
    fmt::print("{} stays waiting until you approve it (`oppx mcp approve {}`).\n", ctx.args[0], ctx.args[0]);
  } else if (now.state == "running") {
    fmt::print("{} is running with {} tool{}.\n", ctx.args[0], now.tool_count, now.tool_count == 1 ? "" : "s");
  } else {
    fmt::print("{} did not start ({}): {}\n", ctx.args[0], now.state, now.reason);
  }
  return rc;
}

int approve(Context& ctx) { return decide(ctx, "approve", true); }
int deny(Context& ctx) { return decide(ctx, "deny", false); }

int tools(Context& ctx) {
  const Command& self = *find_command("mcp", "tools");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  json::object params = json::value_from(proto::McpToolsParams{ctx.args[0]}).as_object();
  return run(ctx, self, proto::kMcpTools, std::move(params), as_json,
             typed<proto::ConnectorEntry>([name = ctx.args[0]](const proto::ConnectorEntry& c) {
               if (c.cached) {
                 fmt::print(stderr, "oppx: {} is {}; these are its tools from its last run\n", name,
                            c.state == "idle" ? "not running (lazy: its first call starts it)" : "still starting");
               } else if (c.state != "running") {
                 fmt::print(stderr, "oppx: {} is {}: {}\n", name, c.state, c.reason);
                 print_steps(stderr, c.steps, "  ");
                 return kExitFailed;
               }
               for (auto& t : c.tools.value_or(json::array{})) {
                 if (t.is_object()) fmt::print("{}\n", tool_line(name, t.as_object()));
               }
               return kExitOk;
             }));
}

int call(Context& ctx) {
  const Command& self = *find_command("mcp", "call");
  bool as_json = take_flag(ctx.args, "--json");
  // The daemon's limit for the call (its default: 120 s); this command waits a little longer, so
  // that the daemon's answer (the tool did not answer in time, with the steps) is what is shown.
  std::chrono::milliseconds limit{120'000};
  if (auto t = std::find(ctx.args.begin(), ctx.args.end(), "--timeout"); t != ctx.args.end()) {
    std::string v = t + 1 != ctx.args.end() ? *(t + 1) : "";
    int seconds = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), seconds);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size() || seconds < 1 || seconds > 3600)
      return usage_error(self, "--timeout takes a number of seconds from 1 to 3600");
    limit = std::chrono::seconds(seconds);
    ctx.args.erase(t, t + 2);
  }
  // What the server asks the user during the call (mcp/elicit): asked on a terminal, else
  // answered by --elicit (declined by default), said on stderr.
  bool terminal = ::isatty(0) == 1 && ::isatty(2) == 1;
  auto policy = terminal ? proto::ElicitPolicy::kAsk : proto::ElicitPolicy::kDecline;
  if (auto e = std::find(ctx.args.begin(), ctx.args.end(), "--elicit"); e != ctx.args.end()) {
    auto p = proto::elicit_policy(e + 1 != ctx.args.end() ? *(e + 1) : "");
    if (!p) return usage_error(self, "--elicit takes ask, decline or accept-defaults");
    if (*p == proto::ElicitPolicy::kAsk && !terminal) return usage_error(self, "--elicit ask needs a terminal");
    policy = *p;
    ctx.args.erase(e, e + 2);
  }
  if (ctx.args.size() < 2 || ctx.args.size() > 3)
    return usage_error(self, "give a connector, a tool and optionally JSON arguments");
  proto::ToolsCallParams params{.connector = ctx.args[0], .tool = ctx.args[1], .timeout_ms = limit.count()};
  if (ctx.args.size() == 3) {
    boost::system::error_code ec;
    json::value a = json::parse(ctx.args[2], ec);
    if (ec || !a.is_object())
      return usage_error(self, "the arguments must be a JSON object, e.g. '{\"message\":\"hi\"}'");
    params.arguments = a;
  }
  // Progress the server reports goes to stderr as it comes; the result alone goes to stdout.
  params.progress_token = 1;
  auto progress = [tool = ctx.args[1]](const std::string& method, const json::value& v) {
    if (method != proto::kToolsProgress) return;
    auto p = proto::decode<proto::ToolsProgress>(v);
    if (!p || !p->progress) return;
    fmt::print(stderr, "oppx: {}: {}{}{}\n", tool, *p->progress, p->total ? fmt::format("/{}", *p->total) : "",
               p->message.empty() ? "" : " " + p->message);
  };
  // --json prints the reply (or the error) as it is, and keeps the exit status of isError as well.
  auto status = [](const json::value& v) {
    auto r = proto::decode<proto::ToolsCallResult>(v);
    return !r || r->is_error ? kExitFailed : kExitOk;
  };
  // A tool that needs a wider login (a step-up, HTTP 403 insufficient_scope): logged in again in
  // place, asked first on a terminal, without asking when $BROWSER names the browser to use; then
  // the call is repeated. At most kMaxStepUps times for one call.
  constexpr int kMaxStepUps = 2;
  std::optional<std::string> step_up;
  auto intercept = [&step_up](const proto::RpcError& e) -> std::optional<int> {
    if (e.kind != proto::kind::kStepUp) return std::nullopt;
    step_up = e.message;
    return kExitFailed;
  };
  auto elicit = [policy](const std::string& method, const json::value& v) -> SyncClient::RequestResult {
    if (method != proto::kMcpElicit)
      return proto::RpcError::make(proto::ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                   "oppx mcp call does not answer " + method);
    auto q = proto::decode<proto::ElicitQuestion>(v);
    if (!q) return proto::RpcError::make(proto::ErrorCode::kInvalidParams, proto::kind::kInvalidParams, q.error());
    if (policy != proto::ElicitPolicy::kAsk) {
      proto::ElicitAnswer a = proto::unasked_answer(policy, *q);
      fmt::print(stderr, "oppx: {}\n", unasked_note(*q, a, policy));
      return json::value_from(a);
    }
    auto line = [](const std::string& prompt) -> std::optional<std::string> {
      fmt::print(stderr, "{}", prompt);
      std::fflush(stderr);
      std::string typed;
      int c = std::getchar();
      if (c == EOF) return std::nullopt;
      for (; c != EOF && c != '\n'; c = std::getchar()) typed += static_cast<char>(c);
      return typed;
    };
    return json::value_from(ask_elicitation(*q, line, [](const std::string& t) { fmt::print(stderr, "{}", t); }));
  };
  for (int round = 0;; ++round) {
    step_up.reset();
    int code = run(ctx, self, proto::kToolsCall, json::value_from(params).as_object(), as_json,
                   typed<proto::ToolsCallResult>([](const proto::ToolsCallResult& r) {
                     fmt::print("{}\n", r.text);
                     return r.is_error ? kExitFailed : kExitOk;
                   }),
                   progress, limit + std::chrono::seconds(15), status, {},
                   round < kMaxStepUps ? Intercept(intercept) : Intercept(), elicit);
    if (!step_up) return code;
    fmt::print(stderr, "oppx: {}\n", *step_up);
    bool asked = ::isatty(0) == 1 && ::isatty(2) == 1;
    const char* browser = std::getenv("BROWSER");
    if (asked) {
      fmt::print(stderr, "Log in to {} again with the wider permission, then repeat the call? [Y/n] ",
                 params.connector);
      std::fflush(stderr);
      std::string answer;
      for (int c = std::getchar(); c != EOF && c != '\n'; c = std::getchar()) answer += static_cast<char>(c);
      if (!answer.empty() && answer[0] != 'y' && answer[0] != 'Y') return kExitFailed;
    } else if (!browser || !*browser) {
      fmt::print(stderr, "  1. Run `oppx mcp login {}`, then call the tool again.\n", params.connector);
      return kExitFailed;
    } else {
      fmt::print(stderr, "oppx: logging in to {} again with the wider permission ($BROWSER opens the page)\n",
                 params.connector);
    }
    if (int login = login_flow(ctx, params.connector, false, stderr); login != kExitOk) return login;
  }
}

int reconnect(Context& ctx) {
  const Command& self = *find_command("mcp", "reconnect");
  bool as_json = take_flag(ctx.args, "--json");
  if (ctx.args.size() > 1) return usage_error(self, "name at most one connector");
  std::string name = ctx.args.empty() ? "" : ctx.args[0];
  json::object params = json::value_from(proto::McpReconnectParams{name}).as_object();
  // Exit status 1 when what was reconnected is not running afterwards (a named one), or when
  // any of them failed (all).
  auto concerned = [name](const proto::ConnectorEntry& c) {
    return name.empty() || (c.name == name && c.state != "hidden");
  };
  auto failed = [name, concerned](const proto::McpListResult& l) {
    for (auto& c : l.connectors) {
      if (concerned(c) && (name.empty() ? c.state == "failed" || c.state == "login" : c.state != "running"))
        return kExitFailed;
    }
    return kExitOk;
  };
  auto show = typed<proto::McpListResult>([concerned, failed](const proto::McpListResult& l) {
    print_list_notes(l);
    std::vector<const proto::ConnectorEntry*> shown;
    for (auto& c : l.connectors) {
      if (concerned(c)) shown.push_back(&c);
    }
    print_entries(shown);
    return failed(l);
  });
  return run(ctx, self, proto::kMcpReconnect, params, as_json, show, {}, kReconnectTimeout,
             typed<proto::McpListResult>(failed));
}

int send_add(Context& ctx, const Command& self, const std::string& name, json::object def, bool project, bool force,
             bool as_json) {
  proto::McpAddParams params{.name = name, .definition = std::move(def), .project = project, .force = force};
  return run(ctx, self, proto::kMcpAdd, json::value_from(params).as_object(), as_json, print_added, {}, kMcpTimeout, {},
             complete_probe);
}

// One of `mcp add`'s OAuth options into the entry's "oauth" block; why not, or empty. A client
// secret is never written into the file: only a ${VAR} reference to where the user keeps it.
std::string add_oauth_flag(json::object& oauth, const std::string& flag, const std::string& value) {
  if (flag == "--client-id") {
    oauth["clientId"] = value;
  } else if (flag == "--client-secret") {
    bool reference = value.size() > 3 && value.starts_with("${") && value.ends_with("}") &&
                     value.find_first_of("${} ", 2) == value.size() - 1;
    if (!reference) {
      return "--client-secret takes a reference to an environment variable, not the secret itself (a file is no "
             "place for it): put it in a variable (e.g. `export MY_CLIENT_SECRET=…` in your shell's profile) and "
             "give --client-secret '${MY_CLIENT_SECRET}' in single quotes";
    }
    oauth["clientSecret"] = value;
  } else if (flag == "--scope") {
    if (value.find(' ') != std::string::npos) return "--scope takes one scope; repeat it for more";
    if (!oauth.contains("scopes")) oauth["scopes"] = json::array();
    oauth["scopes"].as_array().emplace_back(value);
  } else {
    int port = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), port);
    if (ec != std::errc() || end != value.data() + value.size() || port < 1 || port > 65535)
      return "--callback-port takes a port number (1 to 65535)";
    oauth["callbackPort"] = port;
  }
  return "";
}

int add(Context& ctx) {
  const Command& self = *find_command("mcp", "add");
  std::vector<std::string> before, command;
  auto dash = std::find(ctx.args.begin(), ctx.args.end(), "--");
  before.assign(ctx.args.begin(), dash);
  if (dash != ctx.args.end()) command.assign(dash + 1, ctx.args.end());
  bool as_json = take_flag(before, "--json");
  bool project = take_flag(before, "--project");
  bool force = take_flag(before, "--force");
  std::string name, url;
  json::object env, headers, oauth;
  for (std::size_t i = 0; i < before.size(); ++i) {
    const std::string& a = before[i];
    auto value = [&](std::string_view flag) -> std::optional<std::string> {
      if (i + 1 >= before.size()) return std::nullopt;
      (void)flag;
      return before[++i];
    };
    if (a == "-e" || a == "--env") {
      auto kv = value(a);
      auto eq = kv ? kv->find('=') : std::string::npos;
      if (!kv || eq == std::string::npos || eq == 0) return usage_error(self, a + " takes KEY=VALUE");
      if (env.contains(kv->substr(0, eq)))
        return usage_error(self, fmt::format("{} {} is given twice; give each variable once", a, kv->substr(0, eq)));
      env[kv->substr(0, eq)] = kv->substr(eq + 1);
    } else if (a == "-H" || a == "--header") {
      auto h = value(a);
      auto colon = h ? h->find(':') : std::string::npos;
      if (!h || colon == std::string::npos || colon == 0) return usage_error(self, a + " takes 'Name: value'");
      std::string v = h->substr(colon + 1);
      if (!v.empty() && v[0] == ' ') v.erase(0, 1);
      // Repeated exactly, one would overwrite the other here; in another case the daemon says so.
      if (headers.contains(h->substr(0, colon)))
        return usage_error(self, fmt::format("{} {} is given twice; give each header once", a, h->substr(0, colon)));
      headers[h->substr(0, colon)] = v;
    } else if (a == "--url") {
      auto u = value(a);
      if (!u) return usage_error(self, "--url takes a URL");
      url = *u;
    } else if (a == "--client-id" || a == "--client-secret" || a == "--scope" || a == "--callback-port") {
      auto v = value(a);
      if (!v || v->empty()) return usage_error(self, a + " takes a value");
      if (auto bad = add_oauth_flag(oauth, a, *v); !bad.empty()) return usage_error(self, bad);
    } else if (!a.empty() && a[0] == '-') {
      return usage_error(self, "unknown option " + a);
    } else if (name.empty()) {
      name = a;
    } else {
      return usage_error(self, "unexpected argument " + a + " (put the command after --)");
    }
  }
  if (name.empty()) return usage_error(self, "name the connector");
  json::object def;
  if (!url.empty()) {
    if (!command.empty()) return usage_error(self, "give either --url or a command after --, not both");
    if (!env.empty()) return usage_error(self, "-e is for a command's environment; use -H for an HTTP connector");
    def = {{"type", "http"}, {"url", url}};
    if (!headers.empty()) def["headers"] = headers;
    if (!oauth.empty()) {
      if (oauth.contains("clientSecret") && !oauth.contains("clientId"))
        return usage_error(self, "--client-secret needs --client-id");
      def["oauth"] = oauth;
    }
  } else {
    if (command.empty()) return usage_error(self, "give the command after --, or --url <url>");
    if (!headers.empty()) return usage_error(self, "-H is for an HTTP connector (--url)");
    if (!oauth.empty()) return usage_error(self, "the OAuth options are for an HTTP connector (--url)");
    def = {{"command", command[0]}};
    if (command.size() > 1) {
      json::array args;
      for (std::size_t i = 1; i < command.size(); ++i) args.emplace_back(command[i]);
      def["args"] = std::move(args);
    }
    if (!env.empty()) def["env"] = env;
  }
  return send_add(ctx, self, name, std::move(def), project, force, as_json);
}

int add_json(Context& ctx) {
  const Command& self = *find_command("mcp", "add-json");
  bool as_json = take_flag(ctx.args, "--json");
  bool project = take_flag(ctx.args, "--project");
  bool force = take_flag(ctx.args, "--force");
  if (ctx.args.size() != 2) return usage_error(self, "give a name and the JSON of its entry");
  boost::system::error_code ec;
  json::stream_parser parser;
  std::size_t used = parser.write(ctx.args[1].data(), ctx.args[1].size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) {
    return usage_error(self,
                       fmt::format("the definition is not valid JSON: {} at character {} (quote it in single "
                                   "quotes as one argument, e.g. '{{\"command\":\"npx\",\"args\":[\"-y\",\"pkg\"]}}')",
                                   ec.message(), used + 1));
  }
  json::value v = parser.release();
  if (!v.is_object())
    return usage_error(self,
                       "the definition must be a JSON object, e.g. '{\"command\":\"npx\",\"args\":[\"-y\",\"pkg\"]}'");
  // A whole pasted block works too: {"mcpServers":{"<name>":{…}}} (or VS Code's "servers"), its
  // entry of that name, or its only entry under the name given.
  const json::value* block = v.as_object().if_contains("mcpServers");
  if (!block) block = v.as_object().if_contains("servers");
  if (block && block->is_object()) {
    const json::object& entries = block->as_object();
    const json::value* e = entries.if_contains(ctx.args[0]);
    if (!e && entries.size() == 1) {
      e = &entries.begin()->value();
      fmt::print(stderr, "oppx: the pasted block's only entry is named {}; adding it as {}\n",
                 std::string_view(entries.begin()->key()), ctx.args[0]);
    }
    if (!e) {
      std::string names;
      for (auto& [k, val] : entries) names += (names.empty() ? "" : ", ") + std::string(k);
      return usage_error(self, entries.empty()
                                   ? "the pasted block has no entries"
                                   : fmt::format("the pasted block has {} entries ({}) and none named {}; give the "
                                                 "name of the one you want, or paste that entry alone",
                                                 entries.size(), names, ctx.args[0]));
    }
    if (!e->is_object()) return usage_error(self, "the pasted block's entry is not a JSON object");
    v = *e;
  }
  return send_add(ctx, self, ctx.args[0], v.as_object(), project, force, as_json);
}

int remove(Context& ctx) {
  const Command& self = *find_command("mcp", "remove");
  bool as_json = take_flag(ctx.args, "--json");
  bool project = take_flag(ctx.args, "--project");
  if (ctx.args.size() != 1) return usage_error(self, "name one connector");
  json::object params = json::value_from(proto::McpRemoveParams{ctx.args[0], "", project}).as_object();
  return run(ctx, self, proto::kMcpRemove, std::move(params), as_json,
             typed<proto::McpRemoveResult>([](const proto::McpRemoveResult& r) {
               if (!r.warning.empty()) fmt::print(stderr, "oppx: warning: {}\n", r.warning);
               if (!r.consent_error.empty()) fmt::print(stderr, "oppx: {}\n", r.consent_error);
               fmt::print("Removed {} from {}\n", r.name, r.file);
               return kExitOk;
             }));
}

}  // namespace

std::vector<Command> mcp_commands() {
  std::vector<Command> table{
      {"mcp", "list", "[--json]",
       "List your connectors and this repository's, with state, tool count and, when not running, why.",
       "Yours are read from $OPPX_MCP_CONFIG, else mcp.json next to config.json\n"
       "($XDG_CONFIG_HOME/oppx/mcp.json); the repository's from .mcp.json at its root (the\n"
       "nearest folder above this one with .git, else this folder). Edits are picked up at the\n"
       "next command. A repository's connector runs only once you approve it: until then it is\n"
       "`waiting`, shown with its full command or URL, env, headers (values masked), the\n"
       "variables it reads, the files of the repository it runs, and the `oppx mcp approve <name>`\n"
       "line. On a shared name yours wins and the repository's is shown as hidden.",
       list},
      {"mcp", "add", "<name> [--project] [--force] [--json] [-e KEY=VALUE]... -- <command> [args...]",
       "Add a connector (a command over stdio, or --url <url> [-H 'Name: value']... over HTTP).",
       "Also: oppx mcp add <name> [--project] [--force] --url <https://…> [-H 'Name: value']...\n"
       "      [--client-id ID] [--client-secret '${VAR}'] [--scope S]... [--callback-port N]\n"
       "An HTTP connector without an Authorization header logs in with OAuth when its server asks\n"
       "(`oppx mcp login <name>`); the OAuth options name a client registered with the server\n"
       "beforehand (its secret only as a ${VAR} reference), the scopes to ask for, and the local\n"
       "port the browser comes back to.\n"
       "Saved to your mcp.json (0600), or with --project to the repository's .mcp.json, which\n"
       "counts as your consent to exactly that definition. --force replaces one of the same name.\n"
       "Values are written as given: single-quote '${VAR}' so that it stays a reference, expanded\n"
       "from the environment of the oppx command that starts the connector. Names: letters,\n"
       "digits, '-' and '_'. It then starts the connector once and prints its tools as the model\n"
       "sees them, their token cost, and their share of the model's context (asked of the model\n"
       "server in config.json \"server\" or $OPPX_SERVER, 4 s limit), with SMALL_CONTEXT and\n"
       "HEAVY_SHARE warnings. One that does not start is saved anyway, with the reason.",
       add},
      {"mcp", "add-json", "<name> '<json>' [--project] [--force] [--json]",
       "Add a connector from a pasted mcpServers entry (or a whole {\"mcpServers\":…} block).",
       "The same as `oppx mcp add`, with the entry's JSON as given. From a pasted block\n"
       "({\"mcpServers\":…}, or VS Code's {\"servers\":…}) it takes the entry named <name>, else\n"
       "the block's only entry, under <name> (and says so).",
       add_json},
      {"mcp", "remove", "<name> [--project] [--json]",
       "Remove a connector from your mcp.json (or, with --project, the repository's .mcp.json).", "", remove},
      {"mcp", "get", "<name> [--show-values] [--json]",
       "Show one connector: its definition (values masked), source, state, file.",
       "For a repository's connector also its root, the sha256 of its definition, the files of the\n"
       "repository it runs with theirs (runs:), and your consent.\n"
       "--show-values prints env, headers, args and URL unmasked, as written in the file (a\n"
       "${VAR} stays a reference, never its value): review a repository's connector so before\n"
       "you approve it, since a literal value (NODE_OPTIONS=--require …) changes what runs.",
       get},
      {"mcp", "approve", "<name> [--json]", "Allow this repository's connector <name> to run, as it is defined now.",
       "Run it inside the repository. It prints the definition it approves; the approval holds for\n"
       "exactly that definition (a sha256 kept in $XDG_STATE_HOME/oppx/mcp-approved.json) and for\n"
       "the files of the repository it runs (its command when that is a path, arguments that name\n"
       "a program or script there) as they are now: any change to either makes the connector wait\n"
       "for your approval again. Exit status 1 when it was approved but did not start (the reason\n"
       "is printed).",
       approve},
      {"mcp", "deny", "<name> [--json]", "Keep this repository's connector <name> from running.",
       "Recorded for exactly this definition; `oppx mcp approve <name>` changes your mind.", deny},
      {"mcp", "tools", "<name> [--json]", "Show a connector's tools, one line each, as the model sees them.",
       "While it is starting, or idle (lazy), its tools from its last run (same definition) are shown.", tools},
      {"mcp", "call", "<name> <tool> [json-arguments] [--timeout SECONDS] [--elicit HOW] [--json]",
       "Call one tool and print its result.",
       "Progress the server reports is printed to stderr while the call runs (`oppx: <tool>: 2/5 …`).\n"
       "--timeout gives the tool up to SECONDS (1 to 3600; default 120) to answer; then the call is\n"
       "cancelled on the server. Exit status 1 when the tool reports an error (isError) or fails.\n"
       "A tool that needs a wider OAuth login (a step-up) is logged in again in place and called\n"
       "again: asked first on a terminal; without asking when $BROWSER is set; at most twice.\n"
       "A question the server asks during the call (a form, or an address to open) is asked on the\n"
       "terminal; --elicit decline declines it, --elicit accept-defaults accepts a form with its\n"
       "defaults (declined when they do not complete it). Without a terminal it is declined.",
       call},
      {"mcp", "login", "<name> [--json]", "Log in to an HTTP connector with OAuth, in your browser.",
       "oppxd finds the server's authorization server, registers itself there when it has to, and\n"
       "prints the login page's address; $BROWSER (a command given the address) opens it, else\n"
       "xdg-open when there is a display. The browser comes back to http://127.0.0.1:<port>/callback\n"
       "within 3 minutes; on a terminal you may paste the address it was sent to instead (when the\n"
       "browser runs on another machine). The tokens are kept by oppxd (0600, in its state folder),\n"
       "renewed before they expire, shared by every session and kept across restarts. Exit status 1\n"
       "when the login fails, or when the connector does not run after it.",
       mcp_login},
      {"mcp", "logout", "<name> [--json]", "Forget the OAuth tokens of an HTTP connector.",
       "Its session ends, and it waits for `oppx mcp login <name>` again.", mcp_logout},
      {"mcp", "reconnect", "[name] [--json]", "Start one connector again, or all of them.",
       "A named connector gets 3 minutes to start, time enough to log in in the browser (mcp-remote);\n"
       "all of them get 30 s each. Exit status 1 when the named one is not running afterwards, or\n"
       "when any of them failed.",
       reconnect},
  };
  return table;
}

}  // namespace oppx::cli
