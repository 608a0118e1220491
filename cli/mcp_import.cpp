// The places of cli/mcp_import.h, their files read, and each entry translated: the JSON clients
// (Claude Code, Claude Desktop, VS Code, Cursor) share one translator with a few words of their
// own; Codex's TOML tables have theirs. Blocking file reads only.
#include "cli/mcp_import.h"

#include "cli/toml_subset.h"
#include "common/fs.h"
#include "common/masking.h"
#include "common/paths.h"
#include "common/text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include <fcntl.h>
#include <unistd.h>

namespace oppx::cli::mcp_import {

namespace json = boost::json;

namespace {

// ~/.claude.json holds every project's history as well: it can grow to megabytes.
constexpr std::size_t kMaxFileBytes = 64 << 20;

bool valid_name(std::string_view n) {
  return !n.empty() && n.size() <= 64 && std::all_of(n.begin(), n.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// VS Code's predefined variables (Cursor fills in some of them too): never in an environment.
bool editor_variable(std::string_view name) {
  for (std::string_view v : {"workspaceFolder", "workspaceFolderBasename", "workspaceRoot", "file", "fileBasename",
                             "fileDirname", "fileExtname", "relativeFile", "cwd", "execPath", "pathSeparator", "/",
                             "lineNumber", "selectedText", "defaultBuildTask", "fileWorkspaceFolder"}) {
    if (name == v) return true;
  }
  return false;
}

// Builds one candidate: its strings checked for references oppx cannot keep, the reason it is
// refused (the first one met), notes on what changed.
class Translation {
 public:
  Translation(const Source& source, std::string_view name) {
    c_.name = std::string(name);
    c_.source = source;
  }
  bool ok() const { return c_.refused.empty(); }
  void refuse(std::string why) {
    if (ok()) c_.refused = std::move(why);
  }
  void note(std::string what) {
    if (std::find(c_.notes.begin(), c_.notes.end(), what) == c_.notes.end()) c_.notes.push_back(std::move(what));
  }
  json::object& def() { return c_.definition; }
  Candidate done() {
    if (!ok()) c_.definition.clear();
    return std::move(c_);
  }

  // `s` as oppx should read it: ${VAR} and ${VAR:-default} as written; an editor's ${env:X} and
  // ${userHome} in oppx's words; ${input:…} and the editor's own variables refused.
  std::string text(std::string_view s, const std::string& where) {
    bool editor = c_.source.client == Client::kVsCode || c_.source.client == Client::kCursor;
    std::string out;
    std::size_t from = 0;
    for (auto open = s.find("${"); open != std::string_view::npos; open = s.find("${", from)) {
      out += s.substr(from, open - from);
      auto ref = reference_at(s, open);
      if (!ref) {
        refuse(fmt::format("{}: a ${{ that no }} closes", where));
        return {};
      }
      std::string_view inner = s.substr(open + 2, ref->end - open - 3);
      std::string_view written = s.substr(open, ref->end - open);
      if (inner.starts_with("input:")) {
        refuse(
            fmt::format("{}: {} is a value VS Code asks for and keeps itself, which oppx cannot read; put it in "
                        "an environment variable and add the entry with ${{VAR}} in its place (`oppx mcp add`)",
                        where, written));
        return {};
      }
      if (editor && inner.starts_with("env:") && variable_name(inner.substr(4))) {
        out += "${" + std::string(inner.substr(4)) + "}";
        note(
            fmt::format("${{env:NAME}} written as ${{NAME}} (oppx reads it from the environment of the oppx "
                        "command that starts it)"));
      } else if (editor && inner == "userHome") {
        out += "${HOME}";
        note("${userHome} written as ${HOME}");
      } else if (editor && (editor_variable(inner) || inner.find(':') != std::string_view::npos)) {
        refuse(fmt::format("{}: {} is {}'s own variable, which oppx cannot fill in; write the path or value itself",
                           where, written, client_title(c_.source.client)));
        return {};
      } else {
        out += written;
      }
      from = ref->end;
    }
    out += s.substr(from);
    return out;
  }

  // An object of strings (env, headers) into `into`; numbers are taken as their text.
  void strings(const json::value& v, const std::string& where, json::object& into) {
    if (!v.is_object()) return refuse(where + ": expected an object of strings");
    for (const auto& [k, val] : v.as_object()) {
      std::string at = fmt::format("{}.{}", where, std::string_view(k));
      if (val.is_string()) {
        into[k] = text(val.as_string(), at);
      } else if (val.is_int64() || val.is_uint64()) {
        into[k] = json::serialize(val);
      } else {
        return refuse(at + ": expected a string");
      }
    }
  }
  void string_array(const json::value& v, const std::string& where, json::array& into) {
    if (!v.is_array()) return refuse(where + ": expected an array of strings");
    for (const auto& a : v.as_array()) {
      if (!a.is_string()) return refuse(where + ": expected an array of strings");
      into.emplace_back(text(a.as_string(), where));
    }
  }

 private:
  Candidate c_;
};

const char* const kSseFix =
    "oppx speaks streamable HTTP only; if the server offers it too (often at /mcp), add that address with `oppx "
    "mcp add <name> --url …`";

// One entry of Claude Code, Claude Desktop, Cursor (mcpServers) or VS Code (servers).
Candidate json_entry(const Source& source, std::string_view name, const json::value& v) {
  Translation t(source, name);
  std::string where = fmt::format("{}.{}", source.section.back(), name);
  if (!valid_name(name))
    t.refuse(
        "oppx names take only letters, digits, '-' and '_' (at most 64); add it by hand under another name "
        "(`oppx mcp add-json <name> '<json>'`)");
  if (!v.is_object()) t.refuse(where + ": expected an object");
  if (!t.ok()) return t.done();
  const json::object& o = v.as_object();
  std::string type;
  if (auto* ty = o.if_contains("type")) {
    if (!ty->is_string()) t.refuse(where + ".type: expected a string");
    if (ty->is_string()) type = std::string(ty->as_string());
  }
  bool http = type == "http" || type == "streamable-http" || (type.empty() && o.contains("url"));
  if (type == "sse") t.refuse(fmt::format("{}: it uses the older SSE transport; {}", where, kSseFix));
  if (!type.empty() && type != "stdio" && type != "http" && type != "streamable-http" && type != "sse")
    t.refuse(fmt::format("{}.type: unknown type \"{}\" (oppx runs stdio and streamable HTTP servers)", where, type));
  if (type.empty() && o.contains("url") && o.contains("command"))
    t.refuse(where + ": it has both a command and a url; keep one");
  if (!http && !o.contains("command") && t.ok()) t.refuse(where + ": it has neither a command nor a url");
  std::vector<std::string> left_out;
  for (const auto& [key, val] : o) {
    std::string at = fmt::format("{}.{}", where, std::string_view(key));
    if (key == "type") continue;
    if (key == "url" && http) {
      if (!val.is_string() || val.as_string().empty())
        t.refuse(at + ": expected a non-empty string");
      else
        t.def()["url"] = t.text(val.as_string(), at);
    } else if (key == "headers" && http) {
      json::object h;
      t.strings(val, at, h);
      if (!h.empty()) t.def()["headers"] = std::move(h);
    } else if (key == "oauth" && http && source.client == Client::kClaudeCode) {
      if (!val.is_object())
        t.refuse(at + ": expected an object");
      else
        t.def()["oauth"] = val;
    } else if (key == "command" && !http) {
      if (!val.is_string() || val.as_string().empty())
        t.refuse(at + ": expected a non-empty string");
      else
        t.def()["command"] = t.text(val.as_string(), at);
    } else if (key == "args" && !http) {
      json::array args;
      t.string_array(val, at, args);
      if (!args.empty()) t.def()["args"] = std::move(args);
    } else if (key == "env" && !http) {
      json::object env;
      t.strings(val, at, env);
      if (!env.empty()) t.def()["env"] = std::move(env);
    } else if (key == "cwd" && !http) {
      if (!val.is_string())
        t.refuse(at + ": expected a string");
      else
        t.def()["cwd"] = t.text(val.as_string(), at);
    } else if (key == "disabled" && val.is_bool()) {
      if (val.as_bool()) t.def()["disabled"] = true;
    } else if (key == "envFile") {
      t.refuse(at + ": oppx reads no env files; give the variables in env (as ${VAR} references) instead");
    } else if (key == "headersHelper") {
      t.refuse(at + ": oppx runs no command for an entry's headers; give them in headers (as ${VAR} references)");
    } else {
      left_out.emplace_back(key);
    }
  }
  if (!left_out.empty()) t.note(fmt::format("left out (no such setting in oppx): {}", joined(left_out)));
  if (http && type.empty() && source.client == Client::kCursor)
    t.note("Cursor tries SSE as well; oppx speaks streamable HTTP only");
  return t.done();
}

// One [mcp_servers.<name>] table of Codex's config.toml.
Candidate codex_entry(const Source& source, const TomlDocument& doc, const std::string& name, const json::value& v) {
  Translation t(source, name);
  auto at = [&](std::string_view key) {
    TomlPath p{"mcp_servers", name};
    if (!key.empty()) p.emplace_back(key);
    return fmt::format("line {}: mcp_servers.{}{}{}", doc.line_of(p), name, key.empty() ? "" : ".", key);
  };
  if (!valid_name(name))
    t.refuse("oppx names take only letters, digits, '-' and '_' (at most 64); add it by hand under another name");
  if (!v.is_object()) t.refuse(at("") + ": expected a table [mcp_servers." + name + "]");
  if (!t.ok()) return t.done();
  const json::object& o = v.as_object();
  bool http = o.contains("url");
  if (http && o.contains("command")) t.refuse(at("") + ": it has both a command and a url; keep one");
  if (!http && !o.contains("command")) t.refuse(at("") + ": it has neither a command nor a url");
  json::object headers, env;
  std::vector<std::string> left_out;
  auto var_name = [&](const json::value& val, const std::string& where) -> std::string {
    if (!val.is_string() || !variable_name(val.as_string())) {
      t.refuse(where + ": expected the name of an environment variable (letters, digits and _)");
      return {};
    }
    return std::string(val.as_string());
  };
  for (const auto& [key, val] : o) {
    std::string where = at(key);
    if (key == "url") {
      if (!val.is_string() || val.as_string().empty())
        t.refuse(where + ": expected a non-empty string");
      else
        t.def()["url"] = t.text(val.as_string(), where);
    } else if (key == "command") {
      if (!val.is_string() || val.as_string().empty())
        t.refuse(where + ": expected a non-empty string");
      else
        t.def()["command"] = t.text(val.as_string(), where);
    } else if (key == "args") {
      json::array args;
      t.string_array(val, where, args);
      if (!args.empty()) t.def()["args"] = std::move(args);
    } else if (key == "env") {
      t.strings(val, where, env);
    } else if (key == "env_vars") {
      // Variables Codex passes on from its own environment: a reference each, read the same way.
      if (!val.is_array()) t.refuse(where + ": expected an array of variable names");
      for (const auto& n : val.is_array() ? val.as_array() : json::array{}) {
        std::string var = var_name(n, where);
        if (!var.empty() && !env.contains(var)) env[var] = "${" + var + "}";
      }
    } else if (key == "cwd") {
      if (!val.is_string())
        t.refuse(where + ": expected a string");
      else
        t.def()["cwd"] = t.text(val.as_string(), where);
    } else if (key == "http_headers") {
      t.strings(val, where, headers);
    } else if (key == "env_http_headers") {
      if (!val.is_object()) t.refuse(where + ": expected a table of header = \"VARIABLE\"");
      for (const auto& [h, var] : val.is_object() ? val.as_object() : json::object{}) {
        std::string name_of = var_name(var, fmt::format("{}.{}", where, std::string_view(h)));
        if (!name_of.empty()) headers[h] = "${" + name_of + "}";
      }
    } else if (key == "bearer_token_env_var") {
      std::string var = var_name(val, where);
      if (!var.empty()) headers["Authorization"] = "Bearer ${" + var + "}";
    } else if (key == "bearer_token") {
      t.refuse(where +
               ": the token is in the file itself; put it in an environment variable, name that in "
               "bearer_token_env_var, and import again");
    } else if (key == "enabled") {
      if (!val.is_bool())
        t.refuse(where + ": expected true or false");
      else if (!val.as_bool())
        t.def()["disabled"] = true;
    } else if (key == "enabled_tools" || key == "disabled_tools") {
      t.refuse(where +
               ": oppx cannot offer only some of a connector's tools, and importing it would offer them "
               "all; add it by hand (`oppx mcp add`) and keep tools out with `oppx permissions deny`");
    } else {
      left_out.emplace_back(key);
    }
  }
  // Authorization given twice (bearer_token_env_var and a header of that name in another case).
  std::size_t authorization =
      std::count_if(headers.begin(), headers.end(), [](const auto& h) { return lower(h.key()) == "authorization"; });
  if (authorization > 1) t.refuse(at("") + ": Authorization is set twice (bearer_token_env_var and a header)");
  if (!http && !headers.empty()) t.refuse(at("") + ": HTTP headers on a server that is run as a command");
  if (http && !env.empty()) t.refuse(at("") + ": env on a server reached by url; it has no program to give it to");
  if (!headers.empty()) t.def()["headers"] = std::move(headers);
  if (!env.empty()) t.def()["env"] = std::move(env);
  if (!left_out.empty()) t.note(fmt::format("left out (no such setting in oppx): {}", joined(left_out)));
  return t.done();
}

std::string line_col(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, col = 0;
    ++col;
  }
  return fmt::format("{}:{}", line, col);
}

// The file's bytes; nullopt when it does not exist; `error` when it cannot be read.
std::optional<std::string> read_text(const std::string& path, std::string& error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    error = fmt::format("{}: {}", path, std::strerror(errno));
    return std::string();
  }
  std::string text = read_and_close(fd, kMaxFileBytes);
  if (text.size() > kMaxFileBytes) error = fmt::format("{}: larger than {} MiB", path, kMaxFileBytes >> 20);
  return text;
}

}  // namespace

namespace {
struct ClientWords {
  Client client;
  std::string_view id, title;
};
constexpr ClientWords kWords[] = {{Client::kClaudeCode, "claude-code", "Claude Code"},
                                  {Client::kClaudeDesktop, "claude-desktop", "Claude Desktop"},
                                  {Client::kVsCode, "vscode", "VS Code"},
                                  {Client::kCursor, "cursor", "Cursor"},
                                  {Client::kCodex, "codex", "Codex"}};
// Looked up by the enum's value: the rows stay in its order.
static_assert([] {
  for (int i = 0; i < static_cast<int>(std::size(kWords)); ++i) {
    if (static_cast<int>(kWords[i].client) != i) return false;
  }
  return true;
}());
}  // namespace

std::string_view client_id(Client c) { return kWords[static_cast<int>(c)].id; }
std::string_view client_title(Client c) { return kWords[static_cast<int>(c)].title; }

std::optional<Client> client_named(std::string_view id) {
  for (const auto& w : kWords) {
    if (w.id == id) return w.client;
  }
  return std::nullopt;
}

Places places_here() {
  Places p;
  p.home = paths::home();
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  p.config_home = xdg && xdg[0] == '/' ? xdg : p.home + "/.config";
  const char* codex = std::getenv("CODEX_HOME");
  p.codex_home = codex && codex[0] ? codex : p.home + "/.codex";
  char buf[4096];
  p.cwd = ::getcwd(buf, sizeof buf) ? buf : ".";
  p.root = repository_root(p.cwd);
  return p;
}

std::string Source::label() const {
  if (section.size() < 2) return path;
  std::string at = section[0];
  for (std::size_t i = 1; i + 1 < section.size(); ++i) at += "[\"" + section[i] + "\"]";
  return fmt::format("{} (at {})", path, at);
}

std::vector<Source> sources(const Places& p, std::optional<Client> only, bool project) {
  std::vector<Source> all;
  auto add = [&](Client c, std::string path, std::vector<std::string> section, std::string scope) {
    if (!only || *only == c) all.push_back({c, std::move(path), std::move(section), std::move(scope)});
  };
  if (project) {
    add(Client::kClaudeCode, p.root + "/.mcp.json", {"mcpServers"}, "project");
    add(Client::kVsCode, p.root + "/.vscode/mcp.json", {"servers"}, "project");
    add(Client::kCursor, p.root + "/.cursor/mcp.json", {"mcpServers"}, "project");
    add(Client::kCodex, p.root + "/.codex/config.toml", {"mcp_servers"}, "project");
    return all;
  }
  // Claude Code's local scope (this folder's entry) wins over its user scope, as in Claude Code.
  std::string claude = p.home + "/.claude.json";
  add(Client::kClaudeCode, claude, {"projects", p.cwd, "mcpServers"}, "local");
  if (p.root != p.cwd) add(Client::kClaudeCode, claude, {"projects", p.root, "mcpServers"}, "local");
  add(Client::kClaudeCode, claude, {"mcpServers"}, "user");
  add(Client::kClaudeDesktop, p.config_home + "/Claude/claude_desktop_config.json", {"mcpServers"}, "user");
  add(Client::kVsCode, p.config_home + "/Code/User/mcp.json", {"servers"}, "user");
  add(Client::kVsCode, p.config_home + "/Code/User/settings.json", {"mcp", "servers"}, "user");
  add(Client::kCursor, p.home + "/.cursor/mcp.json", {"mcpServers"}, "user");
  add(Client::kCodex, p.codex_home + "/config.toml", {"mcp_servers"}, "user");
  return all;
}

Entries read_source(const Source& source, std::string_view text) {
  Entries out;
  if (source.client == Client::kCodex) {
    auto doc = parse_toml(text);
    if (!doc) {
      out.error = fmt::format("{}: {}", doc.error().line, doc.error().message);
      return out;
    }
    const json::value* servers = doc->root.if_contains("mcp_servers");
    out.present = servers != nullptr;
    if (!servers) return out;
    if (!servers->is_object()) {
      out.error = fmt::format("{}: mcp_servers: expected tables [mcp_servers.<name>]", doc->line_of({"mcp_servers"}));
      return out;
    }
    for (const auto& [name, v] : servers->as_object())
      out.candidates.push_back(codex_entry(source, *doc, std::string(name), v));
    return out;
  }
  json::parse_options options;
  options.allow_comments = true;  // VS Code's files are JSON with comments and trailing commas
  options.allow_trailing_commas = true;
  json::stream_parser parser({}, options);
  boost::system::error_code ec;
  std::size_t used = parser.write(text.data(), text.size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) {
    out.error = fmt::format("{}: not valid JSON: {}", line_col(text, used), ec.message());
    return out;
  }
  json::value doc = parser.release();
  const json::value* at = &doc;
  for (const auto& key : source.section) {
    at = at->is_object() ? at->as_object().if_contains(key) : nullptr;
    if (!at) {
      out.present = false;
      return out;
    }
  }
  if (!at->is_object()) {
    out.error = fmt::format("{}: expected an object of servers", source.section.back());
    return out;
  }
  for (const auto& [name, v] : at->as_object()) out.candidates.push_back(json_entry(source, name, v));
  return out;
}

Scan scan(const std::vector<Source>& list) {
  Scan out;
  std::map<std::string, std::pair<std::optional<std::string>, std::string>> texts;  // one read per file
  for (const auto& s : list) {
    auto it = texts.find(s.path);
    if (it == texts.end()) {
      std::string error;
      auto text = read_text(s.path, error);
      it = texts.emplace(s.path, std::make_pair(std::move(text), std::move(error))).first;
    }
    const auto& [text, error] = it->second;
    FileRead f{s, text.has_value(), error, 0};
    if (text && error.empty()) {
      Entries e = read_source(s, *text);
      if (!e.error.empty()) f.error = fmt::format("{}:{}", s.path, e.error);
      // A section inside a file (this folder's entry in ~/.claude.json) is only listed when there.
      if (!e.present && s.section.size() > 1) f.found = false;
      f.entries = e.candidates.size();
      for (auto& c : e.candidates) out.candidates.push_back(std::move(c));
    }
    out.files.push_back(std::move(f));
  }
  return out;
}

std::string_view action_id(Action a) {
  switch (a) {
    case Action::kAdd:
      return "add";
    case Action::kReplace:
      return "replace";
    case Action::kExists:
      return "exists";
    case Action::kDuplicate:
      return "duplicate";
    case Action::kRefused:
      return "refused";
  }
  return "";
}

std::vector<Planned> plan(const std::vector<Candidate>& candidates, const std::set<std::string>& existing, bool force) {
  std::vector<Planned> out;
  std::map<std::string, const Candidate*> first;
  for (const auto& c : candidates) {
    Planned p{&c, Action::kAdd, {}};
    if (!c.refused.empty()) {
      p.action = Action::kRefused;
      p.why = c.refused;
    } else if (auto it = first.find(c.name); it != first.end()) {
      p.action = Action::kDuplicate;
      p.why =
          fmt::format("the entry of that name from {} comes first; pick one with --from", it->second->source.label());
    } else if (existing.contains(c.name)) {
      p.action = force ? Action::kReplace : Action::kExists;
      if (!force) p.why = fmt::format("oppx already has a connector named {}; --force replaces it", c.name);
    }
    if (p.action != Action::kRefused) first.emplace(c.name, &c);
    out.push_back(std::move(p));
  }
  return out;
}

json::object masked(const json::object& definition) {
  json::object out = definition;
  if (auto* u = out.if_contains("url"); u && u->is_string()) *u = mask_url(u->as_string());
  for (const char* key : {"env", "headers"}) {
    if (auto* m = out.if_contains(key); m && m->is_object()) {
      for (auto& [k, v] : m->as_object()) {
        if (v.is_string()) v = mask_value(v.as_string());
      }
    }
  }
  if (auto* a = out.if_contains("args"); a && a->is_array()) {
    std::vector<std::string> args;
    for (const auto& x : a->as_array()) args.emplace_back(x.is_string() ? x.as_string() : "");
    json::array shown;
    for (auto& x : mask_args(args)) shown.emplace_back(x);
    *a = std::move(shown);
  }
  if (auto* o = out.if_contains("oauth"); o && o->is_object()) {
    if (auto* s = o->as_object().if_contains("clientSecret"); s && s->is_string()) *s = mask_value(s->as_string());
  }
  return out;
}

}  // namespace oppx::cli::mcp_import
