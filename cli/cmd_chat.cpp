// oppx (alone, in a terminal), oppx -c, oppx --resume: the terminal chat, a client of the agent
// that runs in oppxd (cli/agent_client.h). A turn waits for its answer on a thread of its own
// while this one watches the keyboard, so that Ctrl-C cancels it (agent/cancel) and the chat
// stays; the agent's questions are asked here, what the turn prints is cli/chat_front's. Slash
// commands that the CLI already has run it (the same output); the others read and change the
// agent through agent/state. When the daemon restarts or dies, the chat says so, connects again
// and goes on with the conversation as it was last saved.
#include "chat/browser.h"
#include "chat/conversations.h"
#include "chat/sandbox.h"
#include "cli/agent_client.h"
#include "cli/agent_setup.h"
#include "cli/browser.h"
#include "cli/chat_complete.h"
#include "cli/chat_front.h"
#include "cli/elicit_form.h"
#include "cli/connector_watcher.h"
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/line_editor.h"
#include "cli/mcp_login.h"
#include "cli/run_self.h"
#include "cli/output.h"
#include "cli/probe.h"
#include "common/paths.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"
#include "common/text.h"
#include "common/tool_text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <set>
#include <thread>
#include <utility>

#include <climits>
#include <fcntl.h>
#include <unistd.h>

namespace oppx::cli {

namespace json = boost::json;

namespace {

using Clock = std::chrono::steady_clock;

bool is_connector_prompt(const std::string& line) {
  std::string first = line.substr(0, line.find_first_of(" \t\n"));
  auto colon = first.find(':');
  return colon != std::string::npos && colon > 1 && colon + 1 < first.size() &&
         first.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", 1) == colon;
}

const std::vector<std::string>& slash_commands() {
  static const std::vector<std::string> c{
      "/mcp",     "/mcp tools",   "/mcp add",       "/mcp remove",   "/mcp reconnect", "/mcp auth",   "/status",
      "/context", "/permissions", "/sandbox",       "/plan",         "/ask",           "/clear",      "/help",
      "/exit",    "/browser",     "/browser start", "/browser stop", "/browser on",    "/browser off"};
  return c;
}

constexpr std::string_view kHelp =
    "Commands:\n"
    "  /mcp                      connectors, their tools, what they cost per request, why one is not running\n"
    "  /mcp tools <name>         a connector's tools as the model sees them\n"
    "  /mcp add <name> …         add a connector (as `oppx mcp add`); the tool list is read again\n"
    "  /mcp remove <name>        remove one (as `oppx mcp remove`)\n"
    "  /mcp reconnect [name]     start one, or all, again\n"
    "  /mcp auth <name>          log in to one (OAuth, in your browser; 3 minutes)\n"
    "  /status                   the model server, the daemon and this session\n"
    "  /sandbox [MODE|network X] how commands run: read-only, workspace-write or off; network on|off\n"
    "  /context                  what the context holds, in tokens, and what is free\n"
    "  /permissions [remove R]   this project's rules (and remove one)\n"
    "  /plan, /ask               read-only turns (again to leave)\n"
    "  /browser [start|stop]     the session's headless browser: its state, start it now, stop it\n"
    "  /browser on|off           start it with every session without asking, or ask again\n"
    "  /clear                    start a new conversation\n"
    "  /help, /exit\n"
    "Keys: Enter sends; Alt+Enter, Ctrl+J or `\\` then Enter start a new line; Tab completes;\n"
    "Ctrl-C cancels a turn or clears the input (twice within 3 s exits); Ctrl-D exits.\n";

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

struct Chat {
  Context& ctx;
  AgentClient& agent;
  ChatFront& front;
  LineEditor& editor;
  std::string cwd;
  std::unique_ptr<ConnectorWatcher> watcher;

  // `said`: connectors whose going down the turn has told already.
  void show_notices(const std::vector<std::string>& said = {}) {
    if (!watcher) return;
    for (const auto& n : watcher->take()) {
      bool dup = n.down && std::find(said.begin(), said.end(), n.name) != said.end();
      if (!dup) fmt::print("{}\n", n.shown());
    }
  }

  // /sandbox: the mode and the network; /sandbox network on|off for this session; /sandbox MODE
  // (read-only, workspace-write, off; off asks first).
  void sandbox_command(const std::vector<std::string>& w) {
    proto::AgentStateParams change;
    if (w.size() == 3 && w[1] == "network" && (w[2] == "on" || w[2] == "off")) {
      change.network = w[2] == "on";
    } else if (w.size() == 2 && chat::sandbox_mode_from(w[1])) {
      change.sandbox = w[1];
      if (w[1] == "off" && agent.state().sandbox != "off") {
        fmt::print(
            "  ? Run commands with no sandbox for this session (your files, keys and the network open to "
            "them)?\n    [y] yes · [N] no\n");
        std::string a = ask_line("  answer › ");
        if (a != "y" && a != "Y" && a != "yes") {
          fmt::print("The sandbox stays: {}.\n", agent.state().sandbox_text);
          return;
        }
      }
    } else if (w.size() != 1) {
      fmt::print("usage: /sandbox [read-only|workspace-write|off] | /sandbox network on|off\n");
      return;
    }
    if (!change_agent(change)) return;
    fmt::print(
        "sandbox {} (for this session; config.json's \"sandbox\" and \"sandbox_network\" set the "
        "default)\n",
        agent.state().sandbox_text);
  }

  // agent/state with `change`; false (said) when the daemon could not be reached.
  bool change_agent(const proto::AgentStateParams& change) {
    if (!ensure_connected()) return false;
    if (std::string why = agent.update(change); !why.empty()) {
      warn("the agent in the daemon did not answer: " + why);
      return false;
    }
    if (!agent.state().problem.empty()) fmt::print("oppx: {}\n", escape_controls(agent.state().problem));
    return true;
  }

  // The daemon restarted or died since the last request: connected again (a daemon started when
  // none runs) and the agent opened on the conversation last saved. False (said) when it failed.
  bool ensure_connected(bool said = false) {
    if (!said && agent.alive()) return true;
    if (!said) warn("the daemon stopped or restarted; connecting again");
    if (std::string why = agent.reconnect(); !why.empty()) {
      warn("could not connect again: " + why + "; the next message tries again");
      return false;
    }
    watcher = std::make_unique<ConnectorWatcher>(agent.socket());
    watcher->take();
    fmt::print("  connected again; the conversation goes on{}\n",
               agent.state().conversation.empty() ? " (nothing was saved yet: a new one)" : "");
    return true;
  }

  // The connectors, one line each in columns: running with its tools, or its state and why.
  std::vector<std::string> connector_lines(std::size_t reason_cap) {
    std::map<std::string, std::size_t> counts;
    std::vector<std::string> order;
    for (const auto& t : agent.state().tools) {
      if (!counts.count(t.connector)) order.push_back(t.connector);
      ++counts[t.connector];
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : order) rows.push_back({escape_controls(c), "running, " + counted(counts[c], "tool", "tools")});
    for (const auto& n : agent.state().not_offered) {
      std::string why = n.state == "waiting" ? "waiting for your consent"
                        : n.state == "login" ? "needs a login: /mcp auth " + escape_controls(n.name)
                        : n.reason.empty()   ? escape_controls(n.state)
                                             : escape_controls(n.state) + ": " + first_line(n.reason, reason_cap);
      rows.push_back({escape_controls(n.name), why});
    }
    return columns(rows);
  }

  void welcome() {
    std::vector<std::string> lines;
    const proto::AgentState& st = agent.state();
    lines.push_back(fmt::format("oppx {} · {} at {}", OPPX_VERSION, st.model, st.server));
    lines.push_back(fmt::format("context {} · {}",
                                st.context_tokens ? fmt::format("{} tokens", *st.context_tokens) : "unknown", cwd));
    lines.push_back("sandbox " + st.sandbox_text);
    std::vector<std::string> connectors = connector_lines(70);
    for (const auto& c : connectors) lines.push_back("  " + c);
    if (connectors.empty()) lines.push_back("  no connectors (/mcp add to add one)");
    std::size_t w = 0;
    for (auto& l : lines) {
      l = escape_controls(l);
      w = std::max<std::size_t>(w, static_cast<std::size_t>(std::count_if(l.begin(), l.end(), [](char c) {
                                  return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
                                })));
    }
    std::string bar;
    for (std::size_t i = 0; i < w + 2; ++i) bar += "─";
    fmt::print("╭{}╮\n", bar);
    for (const auto& l : lines) {
      std::size_t n = static_cast<std::size_t>(
          std::count_if(l.begin(), l.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
      fmt::print("│ {}{} │\n", l, std::string(w - n, ' '));
    }
    fmt::print("╰{}╯\n", bar);
    cost_warning(true);
    fmt::print("/help for commands · Ctrl-C cancels a turn · Ctrl-D exits\n");
  }

  // A repository's connectors waiting for consent: asked once per repository and definition (a
  // no is recorded as a deny, which the definition keeps until it changes).
  // Returns the connectors approved: `oppx mcp approve` said how their start went.
  std::vector<std::string> ask_consent() {
    std::vector<std::string> approved;
    for (const auto& n : agent.state().not_offered) {
      if (n.state != "waiting" || n.approve.empty()) continue;
      run_self(ctx.self, {"mcp", "get", n.name, "--show-values"});
      std::string answer =
          ask_line(fmt::format("Let this repository's connector {} run? [y/N] ", escape_controls(n.name)));
      bool yes = answer == "y" || answer == "Y" || answer == "yes";
      // The definition was shown just above: the decision's own listing of it would repeat it.
      std::string out;
      run_self(ctx.self, {"mcp", yes ? "approve" : "deny", n.name, "--json"}, &out);
      if (yes) approved.push_back(n.name);
      boost::system::error_code ec;
      json::value reply = json::parse(out, ec);
      if (ec) continue;  // not decided: its error is on the screen already
      auto decided = proto::decode<proto::ConnectorEntry>(reply);
      if (!decided) continue;
      const proto::ConnectorEntry& now = decided->hides ? *decided->hides : *decided;
      std::string name = escape_controls(n.name);
      if (!yes) {
        fmt::print("{} stays off (`oppx mcp approve {}` changes your mind).\n", name, name);
      } else if (now.state == "running") {
        fmt::print("{} is running with {} tool{}.\n", name, now.tool_count, now.tool_count == 1 ? "" : "s");
      } else if (now.state == "hidden") {
        fmt::print("{} stays off while your own connector of that name exists.\n", name);
      } else {
        warn(fmt::format("{} did not start ({}): {}", n.name, now.state, now.reason));
      }
    }
    return approved;
  }

  std::string ask_line(const std::string& prompt) {
    EditResult r = editor.read(prompt);
    return r.kind == EditResult::kLine ? r.text : std::string();
  }

  // A connector's question to the user in a turn (a form, or an address to open), asked here; Ctrl-C
  // (or the end of input) cancels it.
  proto::ElicitAnswer form(const proto::ElicitQuestion& q) {
    AskLine line = [this](const std::string& prompt) -> std::optional<std::string> {
      EditResult r = editor.read(prompt);
      if (r.kind != EditResult::kLine) return std::nullopt;
      return r.text;
    };
    return ask_elicitation(q, line, [](const std::string& text) { fmt::print("{}", text); });
  }

  // /mcp auth NAME, and a wider login asked for in a turn: run here, the paste read from this
  // keyboard (Ctrl-C stops waiting); true once logged in and running.
  bool log_in(const std::string& name) {
    fmt::print("\n");
    ReadKey keys = [](int ms) { return LineEditor::read_key(ms); };
    return login_flow(ctx, name, false, stdout, &keys) == kExitOk;
  }

  // A stdio connector, as the daemon defines it for this folder.
  bool runs_a_program(const std::string& name) {
    auto conn = connect_daemon(ctx.socket, Start::kNever);
    if (!conn) return false;
    auto r = conn->client.call(proto::kMcpGet, json::value_from(proto::McpGetParams{name}), kCallTimeout);
    if (!r) return false;
    auto e = proto::decode<proto::ConnectorEntry>(*r);
    return e && e->type == "stdio";
  }

  chat::Answer ask(const chat::Question& q) {
    if (q.action == "login") {
      std::string name;
      if (const auto* c = q.arguments.if_contains("connector"); c && c->is_string()) name = c->as_string();
      fmt::print("\n  ? {}: {}\n    Log in to it again in your browser, then repeat the call?\n    [y] yes · [N] no\n",
                 escape_controls(name), escape_controls(q.why));
      std::string a = ask_line("  answer › ");
      if ((a == "y" || a == "Y" || a == "yes") && log_in(name)) return {chat::Answer::kYes, ""};
      return {chat::Answer::kNo, ""};
    }
    if (q.action == "browser") {
      fmt::print(
          "\n  ? Start a headless browser (Playwright) for this session?\n"
          "    [y] yes · [a] always (oppx browser on) · [N] no, not in this session · or type what to do instead\n");
      std::string a = ask_line("  answer › ");
      if (a == "y" || a == "Y" || a == "yes") return {chat::Answer::kYes, ""};
      if (a == "a" || a == "A") return {chat::Answer::kAlwaysTool, ""};
      if (a.empty() || a == "n" || a == "N" || a == "no") return {chat::Answer::kNo, ""};
      return {chat::Answer::kText, a};
    }
    // What is asked about, whole: folded first (nothing cut without saying how much), `v` in full.
    bool in_full = false;
    std::string a;
    for (;;) {
      std::string what;
      Shown shown;
      if (q.action == "run") {
        shown = shown_text(q.command, in_full, "      ");
        what = fmt::format("Run this command?\n      {}", shown.text);
      } else if (q.action == "read" || q.action == "grep") {
        // Outside the workspace: the path, whole, and why it is asked (once_only prints it).
        std::string path;
        if (const auto* p = q.arguments.if_contains("path"); p && p->is_string()) path = p->as_string();
        shown = shown_text(path, in_full, "      ");
        what = fmt::format("{} outside the workspace?\n      {}", q.action == "read" ? "Read" : "Search", shown.text);
      } else {
        what = fmt::format("Call {}{}?", escape_controls(q.action),
                           q.read_only ? " (it only reads)" : " (it may change something)");
        shown = shown_arguments(q.arguments, in_full, "      ");
        if (!q.arguments.empty()) what += "\n    arguments:\n" + shown.text;
      }
      if (shown.folded)
        what += q.action == "run" ? "\n    [v] view the whole command" : "\n    [v] view every argument in full";
      if (q.once_only) {
        // Asked every time (the browser's code, a read outside): no "always" to offer, and said so.
        fmt::print(
            "\n  ? {}\n    {}\n    [y] yes · [N] no · or type what to do instead (always is not available here)\n",
            what, escape_controls(q.why));
      } else {
        std::string c = q.action == "run" ? ""
                                          : fmt::format(" [c] always, every {} tool ·",
                                                        escape_controls(q.action.substr(0, q.action.find('.'))));
        // Asked because of what the conversation holds: said, naming what was read.
        std::string why = q.exposed ? "\n    ! " + escape_controls(q.why) : "";
        fmt::print("\n  ? {}{}\n    [y] yes · [a] always{} ·{} [N] no · or type what to do instead\n", what, why,
                   q.action == "run" ? ", this command" : ", this tool", c);
      }
      a = ask_line("  answer › ");
      if (a != "v" && a != "V") break;
      in_full = true;  // then the question again
    }
    if (a == "y" || a == "Y" || a == "yes") return {chat::Answer::kYes, ""};
    if (q.once_only && (a == "a" || a == "A" || a == "c" || a == "C")) {
      fmt::print("    Always is not available here: it is asked every time. Yes, this once.\n");
      return {chat::Answer::kYes, ""};
    }
    if (a == "a" || a == "A") return {chat::Answer::kAlwaysTool, ""};
    if ((a == "c" || a == "C") && q.action != "run") return {chat::Answer::kAlwaysConnector, ""};
    if (a.empty() || a == "n" || a == "N" || a == "no") return {chat::Answer::kNo, ""};
    return {chat::Answer::kText, a};
  }

  // A connector that came, went or changed since: its tools read again.
  void catch_up() {
    if (watcher && watcher->changed()) {
      proto::AgentStateParams refresh;
      refresh.refresh = true;
      change_agent(refresh);
    }
  }

  void turn(const std::string& message) {
    if (!ensure_connected()) return;
    catch_up();  // before the request
    std::atomic<bool> done{false};
    AgentClient::Turn result;
    front.begin_turn();
    std::thread worker([&] {
      result = agent.turn(message);
      done = true;
    });
    bool cancelling = false;
    {
      while (!done) {
        if (auto q = front.pending()) {
          if (auto* permission = std::get_if<chat::Question>(&*q)) {
            front.answer(ask(*permission));
          } else {
            front.answer(form(std::get<proto::ElicitQuestion>(*q)));
          }
          continue;
        }
        front.still_running();
        front.tick();
        std::string k = LineEditor::read_key(50);
        if (k == "\x03") {
          if (!cancelling) {
            cancelling = true;
            front.say("\n  ^C cancelling the turn…\n");
            agent.cancel();
          }
        } else if (k == LineEditor::kEndOfInput) {
          break;  // the terminal is gone: nothing more to read; the turn ends on its own
        } else if (!k.empty()) {
          editor.queue_key(k);  // typed ahead (Ctrl-D too): the next prompt starts with it
        }
      }
    }
    worker.join();
    front.end_turn();
    const proto::AgentTurnResult& r = result.result;
    if (result.cut) return turn_cut(r.actions);
    show_notices(r.connectors_down);
    if (!result.why.empty() && !r.error) {
      warn("the turn did not run: " + result.why);
    } else if (r.cancelled) {
      fmt::print("  (cancelled)\n");
    } else if (r.error) {
      print_model_error(model_error_of(*r.error));
    }
  }

  // The daemon went away in the middle of a turn: said, with what had run (a change may have been
  // made), then the chat connects again on the conversation as the daemon saved it when it stopped.
  void turn_cut(const std::vector<proto::AgentAction>& ran) {
    std::string what;
    for (const auto& a : ran) what += (what.empty() ? "" : ", ") + a.name + " (" + a.status + ")";
    warn(ran.empty() ? "the daemon stopped during the turn: it was cut before any action ran; connecting again"
                     : "the daemon stopped during the turn: it was cut after " + what + "; connecting again");
    ensure_connected(true);
  }

  // A slash command that waits on the daemon (a start, a reconnect, a login: up to minutes):
  // Ctrl-C stops waiting for it (what it asked of the daemon goes on there, and /mcp shows how it
  // ends), and keys typed meanwhile go to the next prompt.
  void waited_for(const std::vector<std::string>& args) {
    fmt::print("  (Ctrl-C stops waiting)\n");
    switch (run_self_interruptible(ctx.self, args, [this](std::string key) { editor.queue_key(std::move(key)); })) {
      case SelfRun::kNotStarted:
        return warn("`oppx " + args[1] + "` could not be started");
      case SelfRun::kInterrupted:
        fmt::print("\n  ^C stopped waiting; it goes on in the daemon (/mcp shows how it ends)\n");
        return;
      case SelfRun::kEnded:
        return;
    }
  }

  void context_report() {
    const proto::AgentState& st = agent.state();
    std::int64_t system = st.system_tokens;
    std::map<std::string, std::string> lists;
    for (const auto& t : st.tools) lists[t.connector] += t.line + "\n";
    std::int64_t convo = st.conversation_tokens;
    std::vector<std::vector<std::string>> rows{
        {"  system prompt", std::to_string(system), "tokens, of which the tool lists:"}};
    for (const auto& [c, text] : lists)
      rows.push_back({"    " + escape_controls(c), std::to_string(estimate_tokens(text))});
    rows.push_back({"  conversation", std::to_string(convo), "tokens"});
    if (st.context_tokens) {
      std::int64_t free = *st.context_tokens - system - convo;
      rows.push_back({"  free", std::to_string(free), fmt::format("of {} tokens", *st.context_tokens)});
    }
    fmt::print("Context (about 4 characters a token):\n");
    for (const auto& line : columns(rows, "lr")) fmt::print("{}\n", line);
    if (!st.context_tokens)
      fmt::print("  the model's context length is unknown ({})\n", escape_controls(st.context_note));
  }

  // After /mcp add, remove, reconnect or auth: the tools read again. The cost warning only after an
  // add (the seed): the others change nothing the user chose, and it would repeat each time.
  void after_list_change(bool added) {
    proto::AgentStateParams refresh;
    refresh.refresh = true;
    if (change_agent(refresh) && added) cost_warning(false);
  }

  void warn(std::string_view text) { fmt::print("{}\n", warning_text(text, terminal_columns())); }

  // The SMALL_CONTEXT and HEAVY_SHARE warnings for the whole tool list; `only_heavy` at start,
  // where a small window alone would repeat every session.
  void cost_warning(bool only_heavy) {
    const proto::AgentState& st = agent.state();
    if (!st.context_tokens) return;
    std::string lines;
    for (const auto& t : st.tools) lines += t.line + "\n";
    for (const auto& [kind, message] :
         cost_warnings(estimate_tokens(lines), *st.context_tokens, "The connectors' tool lists take",
                       "`oppx mcp remove <name>` drops one")) {
      if (!only_heavy || kind == "HEAVY_SHARE") warn(message);
    }
  }

  void browser_command(const std::string& sub) {
    proto::AgentStateParams change;
    if (sub == "start") {
      fmt::print("Starting the browser…\n");
      std::fflush(stdout);
      // Installed here when it is not, with npm's progress on this terminal.
      if (std::string why = front.prepare_browser(); !why.empty()) return fmt::print("oppx: {}\n", why);
      change.browser = "start";
      if (change_agent(change) && agent.state().problem.empty())
        fmt::print("The browser is running; its tools are offered.\n");
    } else if (sub == "stop") {
      change.browser = "stop";
      if (change_agent(change) && agent.state().problem.empty()) fmt::print("The browser is stopped.\n");
    } else if (sub == "on" || sub == "off") {
      run_self(ctx.self, {"browser", sub});
    } else if (sub.empty()) {
      if (!change_agent(change)) return;
      fmt::print("Browser: {}; {}.\n",
                 agent.state().browser_running   ? "running in this session"
                 : agent.state().browser_offered ? "off; the agent asks before it starts one"
                                                 : "off and not offered in this session",
                 chat::browser_auto() ? "on: it starts with every session (/browser off to ask)"
                                      : "the chat asks once a session (/browser on starts it always)");
    } else {
      fmt::print("/browser takes start, stop, on or off.\n");
    }
  }

  // False: exit.
  bool slash(const std::string& line) {
    auto w = words(line);
    const std::string& cmd = w[0];
    if (cmd == "/exit" || cmd == "/quit") return false;
    if (cmd == "/help") {
      fmt::print("{}", kHelp);
    } else if (cmd == "/clear") {
      proto::AgentStateParams change;
      change.clear = true;
      if (change_agent(change)) fmt::print("A new conversation.\n");
    } else if (cmd == "/plan" || cmd == "/ask") {
      bool on = agent.state().mode != "plan";
      proto::AgentStateParams change;
      change.mode = on ? "plan" : "chat";
      if (!change_agent(change)) return true;
      if (on) {
        fmt::print("Read-only turns: only actions that read are offered ({} again to leave).\n", cmd);
      } else {
        fmt::print("Back to normal turns.\n");
      }
    } else if (cmd == "/sandbox") {
      sandbox_command(w);
    } else if (cmd == "/browser") {
      browser_command(w.size() > 1 ? w[1] : "");
    } else if (cmd == "/context") {
      catch_up();
      if (change_agent({})) context_report();
    } else if (cmd == "/status") {
      catch_up();
      if (!change_agent({})) return true;
      const proto::AgentState& st = agent.state();
      fmt::print("model {} at {} (context {})\n", escape_controls(st.model), escape_controls(st.server),
                 st.context_tokens ? std::to_string(*st.context_tokens) : "unknown");
      fmt::print("mode {} · {} offered · conversation {}\n", st.mode, counted(st.tools.size(), "tool", "tools"),
                 st.conversation.empty() ? "not saved yet" : escape_controls(st.conversation));
      std::vector<std::string> connectors = connector_lines(100);
      fmt::print("connectors:{}\n", connectors.empty() ? " none (/mcp add to add one)" : "");
      for (const auto& c : connectors) fmt::print("  {}\n", c);
      run_self(ctx.self, {"daemon", "status"});
    } else if (cmd == "/permissions") {
      if (w.size() >= 3 && w[1] == "remove") {
        run_self(ctx.self, {"permissions", "remove", w[2]});
      } else {
        run_self(ctx.self, {"permissions", "list"});
      }
    } else if (cmd == "/mcp") {
      std::vector<std::string> args(w.begin() + 1, w.end());
      std::string sub = args.empty() ? "list" : args[0];
      if (args.empty()) args = {"list"};
      args.insert(args.begin(), "mcp");
      if (sub == "auth" && args.size() != 3) {
        fmt::print("usage: /mcp auth <name> (log in to one connector in your browser)\n");
      } else if (sub == "auth" && runs_a_program(args[2])) {
        // A program logs in its own way at its start (mcp-remote opens the browser): started
        // again, with time for that.
        fmt::print("{} runs a program, which logs in at its start: starting it again (3 minutes for its login)\n",
                   escape_controls(args[2]));
        waited_for({"mcp", "reconnect", args[2]});
      } else if (sub == "auth") {
        log_in(args[2]);
      } else if (sub == "add" || sub == "reconnect") {
        waited_for(args);
      } else {
        run_self(ctx.self, args);
      }
      if (sub == "list") {
        catch_up();
        std::map<std::string, std::string> lists;
        for (const auto& t : agent.state().tools) lists[t.connector] += t.line + "\n";
        std::vector<std::string> tokens;
        for (const auto& [c, text] : lists) tokens.push_back(std::to_string(estimate_tokens(text)));
        tokens = right_aligned(std::move(tokens));
        std::vector<std::vector<std::string>> rows;
        for (const auto& [c, text] : lists)
          rows.push_back(
              {"  " + escape_controls(c), "costs about " + tokens[rows.size()] + " tokens of every request"});
        for (const auto& line : columns(rows)) fmt::print("{}\n", line);
      }
      if (sub == "add" || sub == "remove" || sub == "reconnect" || sub == "auth") after_list_change(sub == "add");
    } else {
      fmt::print("No command {}; /help lists them.\n", escape_controls(cmd));
    }
    return true;
  }

  int loop() {
    Clock::time_point last_interrupt{};
    for (;;) {
      EditResult r = editor.read(agent.state().mode == "plan" ? "plan › " : "› ");
      if (r.kind == EditResult::kEof) return kExitOk;
      if (r.kind == EditResult::kInterrupt) {
        if (Clock::now() - last_interrupt < std::chrono::seconds(3)) return kExitOk;
        last_interrupt = Clock::now();
        fmt::print("(Ctrl-C again to exit)\n");
        continue;
      }
      std::string text = r.text;
      if (text.find_first_not_of(" \t\n") == std::string::npos) continue;
      editor.add_history(text);
      // `/<connector>:<prompt> …` is a connector's prompt, which the agent fetches; any other
      // slash is the chat's own.
      if (text[0] == '/' && !is_connector_prompt(text)) {
        if (!slash(text)) return kExitOk;
        continue;
      }
      turn(text);
    }
  }
};

// --resume: this folder's ten newest conversations (agent/conversations), and the one picked (""
// for none: a new one).
std::string pick_conversation(const std::vector<proto::AgentConversation>& list, LineEditor& editor) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string stem = std::filesystem::path(list[i].conversation).stem().string().substr(0, 15);
    fmt::print("  {}. {}  {}\n", i + 1, escape_controls(stem), escape_controls(list[i].first));
  }
  if (list.empty()) return {};
  EditResult r = editor.read("Resume which (number)? ");
  std::size_t n = r.kind == EditResult::kLine ? static_cast<std::size_t>(std::atoi(r.text.c_str())) : 0;
  return n >= 1 && n <= list.size() ? list[n - 1].conversation : std::string();
}

int chat_command(Context& ctx) {
  bool cont = take_flag(ctx.args, "-c") || take_flag(ctx.args, "--continue");
  bool resume = take_flag(ctx.args, "--resume");
  bool forget = take_flag(ctx.args, "--forget");
  if (!ctx.args.empty()) return usage_error(*find_command("", "chat"), "unknown argument " + ctx.args[0]);
  if (forget) {
    std::string here;
    if (char buf[PATH_MAX]; ::getcwd(buf, sizeof buf)) here = buf;
    auto n = chat::forget_conversations(here);
    if (!n) {
      fmt::print(stderr, "oppx: {}\n", n.error());
      return kExitFailed;
    }
    fmt::print("Forgot {} conversation{} of {}.\n", *n, *n == 1 ? "" : "s", escape_controls(here));
    return kExitOk;
  }
  if (::isatty(0) != 1) {
    // No terminal: one message from stdin, as `oppx -p`.
    Context print{ctx.socket, cont ? std::vector<std::string>{"-c"} : std::vector<std::string>{}, ctx.self};
    return find_command("", "-p")->run(print);
  }
  std::string cwd;
  if (char buf[PATH_MAX]; ::getcwd(buf, sizeof buf)) cwd = buf;
  ChatFront front;
  std::string history = paths::state_dir() + "/history";
  std::filesystem::create_directories(paths::state_dir());
  AgentClient* agent_seen = nullptr;  // for the completion, once the agent is open
  OfferCompletion offers(ctx.socket);
  LineEditor editor(history, [&agent_seen, &offers](std::string_view before) {
    std::vector<std::string> out;
    std::string b(before);
    std::set<std::string> connectors;
    if (agent_seen) {
      for (const auto& t : agent_seen->state().tools) connectors.insert(t.connector);
      for (const auto& n : agent_seen->state().not_offered) connectors.insert(n.name);
    }
    // @connector:uri and /connector:prompt, whole words; "/…" before its colon also lists the
    // chat's own commands.
    std::vector<std::string> found = offers.complete(before, connectors);
    if (!found.empty() && (b[0] != '/' || b.find(':') != std::string::npos)) return found;
    for (const char* sub : {"/mcp tools ", "/mcp remove ", "/mcp reconnect ", "/mcp auth "}) {
      if (b.rfind(sub, 0) != 0) continue;
      std::string word = b.substr(std::string_view(sub).size());
      for (const auto& n : connectors) {
        if (n.rfind(word, 0) == 0) out.push_back(n);
      }
      return out;
    }
    for (const auto& c : slash_commands()) {
      if (!b.empty() && b[0] == '/' && c.rfind(b, 0) == 0) out.push_back(c);
    }
    out.insert(out.end(), found.begin(), found.end());
    // Complete the last word only: what follows its start.
    auto sp = b.rfind(' ');
    if (sp != std::string::npos) {
      for (auto& o : out) o = o.substr(sp + 1);
    }
    return out;
  });
  // Raw for the whole chat (output processing stays on): a key typed between two reads (Ctrl-D
  // as a turn ends) is kept, where a switch back to cooked mode would lose it. Slash commands'
  // programs run in it too; they do not read the terminal.
  RawTerminal raw;
  AgentClient agent(ctx.socket, {cwd, "chat", true, cont, {}, std::nullopt}, front);
  if (resume) {
    auto list = agent.conversations(10);
    if (!list) {
      fmt::print(stderr, "oppx: {}\n", escape_controls(list.error().message));
      return list.error().exit_code;
    }
    agent.continue_conversation(pick_conversation(*list, editor));
  }
  // With `oppx browser on`, installed here when it is not (npm's progress on this terminal); the
  // daemon starts it with the session.
  std::string browser_problem = chat::browser_auto() ? prepare_browser() : std::string();
  auto opened = agent.open();
  if (!opened && opened.error().no_conversation) {
    fmt::print(stderr, "oppx: {}; starting a new one\n", escape_controls(opened.error().message));
    agent.start_new();
    opened = agent.open();
  }
  if (!opened) {
    if (opened.error().model) {
      print_model_error(*opened.error().model);
    } else {
      fmt::print(stderr, "oppx: {}\n", escape_controls(opened.error().message));
    }
    return opened.error().exit_code;
  }
  if (std::string why = agent.update(); !why.empty()) {
    fmt::print(stderr, "oppx: the agent in the daemon did not answer: {}\n", escape_controls(why));
    return kExitNoDaemon;
  }
  agent_seen = &agent;
  Chat chat{ctx, agent, front, editor, cwd, nullptr};
  // Subscribed once the agent has listed the connectors: what comes, goes or changes after it is
  // heard of, and its tools are read again before the next request.
  chat.watcher = std::make_unique<ConnectorWatcher>(ctx.socket);
  chat.watcher->take();  // the welcome says what the listing has
  chat.welcome();
  for (const auto& n : opened->notices) chat.warn(n);
  if (!browser_problem.empty()) chat.warn("the browser is on but did not start: " + browser_problem);
  chat.watcher->said(chat.ask_consent());
  if (!agent.state().not_offered.empty()) chat.change_agent({.refresh = true});
  editor.on_idle([&chat] {
    std::vector<std::string> lines;
    if (chat.watcher) {
      for (const auto& n : chat.watcher->take()) lines.push_back(n.shown());
    }
    return lines;
  });
  return chat.loop();
}

}  // namespace

std::vector<Command> chat_commands() {
  return {{"", "chat", "[-c] [--resume] [--forget]", "Open the chat (what `oppx` alone does in a terminal).",
           "The terminal chat with the model server of config.json (or OPPX_SERVER): the agent picks\n"
           "actions (reply, read, grep, run, browser, any running connector's tool), asks before what needs\n"
           "permission (y, a always this tool, c always this connector, N, or text), and streams its\n"
           "reply. /help lists the slash commands.\n"
           "  -c         continue the last conversation of this folder\n"
           "  --resume   pick one of this folder's conversations\n"
           "  --forget   remove this folder's saved conversations, and end\n"
           "Conversations older than config.json's \"retention_days\" (30) are removed.\n"
           "Without a terminal on stdin, it reads one message and behaves as `oppx -p`.",
           chat_command}};
}

}  // namespace oppx::cli
