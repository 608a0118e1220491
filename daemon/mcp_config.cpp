// Reading mcp.json. Boost.JSON's incremental parser says how far it got, which gives the
// line:col of a syntax error; a type error names the key path and, found by a small scanner of
// the same text, the line:col of that value.
#include "daemon/mcp_config.h"

#include "common/fs.h"
#include "common/paths.h"
#include "common/text.h"

#include <boost/json/serialize.hpp>
#include <boost/json/stream_parser.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_set>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

std::string position(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return fmt::format("{}:{}", line, col);
}

boost::system::result<Pairs, std::string> string_map(const json::value& v, const std::string& where) {
  if (!v.is_object()) return where + ": expected an object of strings";
  Pairs out;
  for (auto& [k, val] : v.as_object()) {
    if (!val.is_string()) return fmt::format("{}.{}: expected a string", where, std::string_view(k));
    out.emplace_back(std::string(k), std::string(val.as_string()));
  }
  return out;
}

// Where a value sits in well-formed JSON text: the offset of the value under `keys` (object
// keys, outermost first), for a type error's line:col. Boost.JSON keeps no positions.
class Locator {
 public:
  explicit Locator(std::string_view t) : t_(t) {}

  std::optional<std::size_t> find(const std::vector<std::string>& keys) {
    ws();
    for (const auto& key : keys) {
      if (!member(key)) return std::nullopt;
    }
    return i_;
  }

 private:
  void ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  // A string at i_, its raw content (escapes kept, which is enough to compare plain keys).
  std::optional<std::string_view> str() {
    if (i_ >= t_.size() || t_[i_] != '"') return std::nullopt;
    std::size_t start = ++i_;
    while (i_ < t_.size() && t_[i_] != '"') i_ += t_[i_] == '\\' ? 2 : 1;
    if (i_ >= t_.size()) return std::nullopt;
    return t_.substr(start, i_++ - start);
  }
  bool skip() {
    ws();
    if (i_ >= t_.size()) return false;
    if (t_[i_] == '"') return str().has_value();
    if (t_[i_] == '{' || t_[i_] == '[') {
      char close = t_[i_] == '{' ? '}' : ']';
      ++i_;
      ws();
      if (i_ < t_.size() && t_[i_] == close) return ++i_, true;
      while (i_ < t_.size()) {
        if (close == '}') {
          ws();
          if (!str()) return false;
          ws();
          if (i_ >= t_.size() || t_[i_++] != ':') return false;
        }
        if (!skip()) return false;
        ws();
        if (i_ < t_.size() && t_[i_] == ',') {
          ++i_;
          continue;
        }
        return i_ < t_.size() && t_[i_++] == close;
      }
      return false;
    }
    while (i_ < t_.size() && std::string_view(",]} \t\r\n").find(t_[i_]) == std::string_view::npos) ++i_;
    return true;
  }
  // In the object at i_, moves i_ to the value of `key`.
  bool member(const std::string& key) {
    ws();
    if (i_ >= t_.size() || t_[i_] != '{') return false;
    ++i_;
    while (true) {
      ws();
      auto k = str();
      if (!k) return false;
      ws();
      if (i_ >= t_.size() || t_[i_++] != ':') return false;
      ws();
      if (*k == key) return true;
      if (!skip()) return false;
      ws();
      if (i_ >= t_.size() || t_[i_++] != ',') return false;
    }
  }

  std::string_view t_;
  std::size_t i_ = 0;
};

// "mcpServers.<name>.args: …" → "<line>:<col>: " of that value, when it can be found.
std::string where_in(std::string_view text, std::string_view name, std::string_view message) {
  std::string prefix = fmt::format("mcpServers.{}", name);
  auto colon = message.find(": ");
  if (message.substr(0, prefix.size()) != prefix || colon == std::string_view::npos || colon < prefix.size()) return {};
  std::vector<std::string> keys{"mcpServers", std::string(name)};
  std::string_view rest = message.substr(prefix.size(), colon - prefix.size());
  while (!rest.empty() && rest[0] == '.') {
    rest.remove_prefix(1);
    auto dot = rest.find('.');
    keys.emplace_back(rest.substr(0, dot));
    rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot);
  }
  auto at = Locator(text).find(keys);
  return at ? position(text, *at) + ": " : std::string();
}

// An entry oppx cannot use, kept to be listed: its name, its text and what of it can be shown.
ConnectorDef unusable(std::string_view name, const json::value& v, std::string why, std::string fix) {
  ConnectorDef d;
  d.name = std::string(name);
  d.canonical = json::serialize(v);
  d.unsupported = std::move(why);
  d.fix = std::move(fix);
  if (const json::object* o = v.if_object()) {
    if (auto* url = o->if_contains("url"); url && url->is_string()) {
      d.kind = ConnectorDef::Kind::kHttp;
      d.url = std::string(url->as_string());
    } else if (auto* cmd = o->if_contains("command"); cmd && cmd->is_string()) {
      d.command = std::string(cmd->as_string());
    }
  }
  return d;
}

// "oauth": {"clientId": "…", "clientSecret": "${VAR}", "scopes": ["…"], "callbackPort": N}
boost::system::result<OAuthDef, std::string> parse_oauth(const json::value& v, const std::string& where) {
  using Result = boost::system::result<OAuthDef, std::string>;
  auto bad = [](std::string why) { return Result(boost::system::in_place_error, std::move(why)); };
  if (!v.is_object()) return bad(where + ": expected an object");
  OAuthDef out;
  for (auto& [key, value] : v.as_object()) {
    std::string at = fmt::format("{}.{}", where, std::string_view(key));
    if (key == "clientId" || key == "clientSecret") {
      if (!value.is_string() || value.as_string().empty()) return bad(at + ": expected a non-empty string");
      (key == "clientId" ? out.client_id : out.client_secret) = std::string(value.as_string());
    } else if (key == "scopes") {
      if (!value.is_array()) return bad(at + ": expected an array of strings");
      for (auto& s : value.as_array()) {
        if (!s.is_string() || s.as_string().empty() || s.as_string().find(' ') != json::string::npos)
          return bad(at + ": expected an array of scope names (strings without spaces)");
        out.scopes.emplace_back(s.as_string());
      }
    } else if (key == "callbackPort") {
      if (!value.is_int64() || value.as_int64() < 1 || value.as_int64() > 65535)
        return bad(at + ": expected a port number (1 to 65535)");
      out.callback_port = static_cast<int>(value.as_int64());
    } else {
      return bad(fmt::format("{}: unknown key; use clientId, clientSecret, scopes or callbackPort", at));
    }
  }
  if (!out.client_secret.empty() && out.client_id.empty()) return bad(where + ".clientSecret: given without clientId");
  return out;
}

}  // namespace

bool logs_in_with_oauth(const ConnectorDef& def) {
  if (def.kind != ConnectorDef::Kind::kHttp) return false;
  return std::none_of(def.headers.begin(), def.headers.end(),
                      [](const auto& h) { return lower(h.first) == "authorization"; });
}

boost::system::result<ConnectorDef, EntryError> parse_mcp_entry(std::string_view name, const json::value& v) {
  const std::string where = fmt::format("mcpServers.{}", name);
  if (!valid_name(name)) return EntryError{where + ": a name may hold only letters, digits, '-' and '_'"};
  if (!v.is_object()) return EntryError{where + ": expected an object"};
  const json::object& o = v.as_object();
  ConnectorDef d;
  d.name = std::string(name);
  d.canonical = json::serialize(o);
  if (auto* off = o.if_contains("disabled")) {
    if (!off->is_bool()) return EntryError{where + ".disabled: expected true or false"};
    d.disabled = off->as_bool();
  }
  if (auto* pin = o.if_contains("alwaysLoad")) {
    const std::string bad = where + ".alwaysLoad: expected true, false or an array of tool names";
    if (pin->is_bool()) {
      if (pin->as_bool()) d.always_load.emplace_back("*");
    } else if (pin->is_array()) {
      for (const auto& t : pin->as_array()) {
        if (!t.is_string() || t.as_string().empty()) return EntryError{bad};
        d.always_load.emplace_back(t.as_string());
      }
    } else {
      return EntryError{bad};
    }
  }
  if (auto* lazy = o.if_contains("lazy")) {
    if (!lazy->is_bool()) return EntryError{where + ".lazy: expected true or false"};
    d.lazy = lazy->as_bool();
  }
  if (auto* limit = o.if_contains("resultLimit")) {
    if (!limit->is_int64() || limit->as_int64() < 1000 || limit->as_int64() > 10'000'000)
      return EntryError{where + ".resultLimit: expected a number of characters from 1000 to 10000000"};
    d.result_limit = static_cast<std::size_t>(limit->as_int64());
  }
  std::string type = "stdio";
  if (auto* t = o.if_contains("type")) {
    if (!t->is_string()) return EntryError{where + ".type: expected a string"};
    type = std::string(t->as_string());
  }
  if (type == "http" || type == "streamable-http" || (!o.contains("type") && o.contains("url"))) {
    d.kind = ConnectorDef::Kind::kHttp;
    auto* url = o.if_contains("url");
    if (!url || !url->is_string()) return EntryError{where + ".url: required (a string)"};
    d.url = std::string(url->as_string());
    if (auto* h = o.if_contains("headers")) {
      auto headers = string_map(*h, where + ".headers");
      if (!headers) return EntryError{headers.error()};
      d.headers = std::move(*headers);
    }
    if (auto* a = o.if_contains("oauth")) {
      auto oauth = parse_oauth(*a, where + ".oauth");
      if (!oauth) return EntryError{oauth.error()};
      d.oauth = std::move(*oauth);
    }
    return d;
  }
  if (type == "sse") {
    return EntryError{where + ".type: the older SSE transport is not supported",
                      "oppx speaks streamable HTTP; if the server has one, use its /mcp URL (\"type\": \"http\", "
                      "\"url\": \"https://…/mcp\")"};
  }
  if (type != "stdio")
    return EntryError{fmt::format("{}.type: unknown type \"{}\"; use \"stdio\" or \"http\"", where, type)};
  auto* cmd = o.if_contains("command");
  if (!cmd || !cmd->is_string() || cmd->as_string().empty()) return EntryError{where + ".command: required (a string)"};
  d.command = std::string(cmd->as_string());
  if (auto* a = o.if_contains("args")) {
    if (!a->is_array()) return EntryError{where + ".args: expected an array of strings"};
    for (auto& arg : a->as_array()) {
      if (!arg.is_string()) return EntryError{where + ".args: expected an array of strings"};
      d.args.emplace_back(arg.as_string());
    }
  }
  if (auto* e = o.if_contains("env")) {
    auto env = string_map(*e, where + ".env");
    if (!env) return EntryError{env.error()};
    d.env = std::move(*env);
  }
  if (auto* cwd = o.if_contains("cwd")) {
    if (!cwd->is_string()) return EntryError{where + ".cwd: expected a string"};
    d.cwd = std::string(cwd->as_string());
  }
  return d;
}

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

boost::system::result<McpConfig, std::string> parse_mcp_config(std::string_view text, const std::string& path) {
  if (text.size() > kMaxConfigBytes) {
    return fmt::format("{}: {} bytes is over the limit of {} bytes for a connectors file", path, text.size(),
                       kMaxConfigBytes);
  }
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {
    return fmt::format("{}:1:1: the file starts with a byte-order mark; save it as UTF-8 without one", path);
  }
  json::stream_parser p;
  boost::system::error_code ec;
  std::size_t used = p.write_some(text.data(), text.size(), ec);
  if (!ec) p.finish(ec);
  if (ec) return fmt::format("{}:{}: {}", path, position(text, used), ec.message());
  json::value root = p.release();
  if (!root.is_object()) return fmt::format("{}: expected a JSON object with \"mcpServers\"", path);
  McpConfig cfg;
  const json::value* servers = root.as_object().if_contains("mcpServers");
  if (!servers) {
    if (const json::value* vscode = root.as_object().if_contains("servers"); vscode && vscode->is_object()) {
      cfg.notes.push_back(fmt::format(
          "{} has no \"mcpServers\" but a \"servers\" key, as VS Code's .vscode/mcp.json has; oppx reads "
          "\"mcpServers\": rename \"servers\" to \"mcpServers\" (its entries work as they are, with ${{env:NAME}} "
          "written ${{NAME}}; VS Code's ${{input:…}} has no counterpart here: use a variable)",
          path));
    }
    return cfg;
  }
  if (!servers->is_object()) return fmt::format("{}: mcpServers: expected an object", path);
  // An entry that is wrong on its own is set aside (listed `unsupported`); the others load.
  for (auto& [name, entry] : servers->as_object()) {
    auto d = parse_mcp_entry(name, entry);
    if (!d) {
      std::string at = where_in(text, name, d.error().message);  // "3:12: " when found
      cfg.connectors.push_back(unusable(
          name, entry, fmt::format("{}:{}{}", path, at.empty() ? " " : at, d.error().message),
          d.error().fix.empty() ? fmt::format("Correct it in {}; oppx reads the file again at the next command.", path)
                                : d.error().fix));
      cfg.connectors.back().file = path;
      continue;
    }
    if (name == "playwright") {
      // The name of the browser oppxd starts itself for each session (SPEC §5): this entry is ignored.
      cfg.connectors.push_back(unusable(
          name, entry,
          fmt::format("{}: mcpServers.playwright is ignored: oppx runs its own Playwright browser for each session "
                      "under that name",
                      path),
          "Use `oppx browser on` (or `/browser start` in the chat) for the browser; rename this entry in " + path +
              " to run your own beside it."));
      cfg.connectors.back().file = path;
      continue;
    }
    d->file = path;
    cfg.connectors.push_back(std::move(*d));
  }
  return cfg;
}

boost::system::result<McpConfig, std::string> load_mcp_config(const std::string& path) {
  // O_NONBLOCK: a repository's .mcp.json may be a FIFO, whose open would block the daemon.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return McpConfig{};
    return fmt::format("{}: cannot read it: {}", path, std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fmt::format("{}: not a regular file; a connectors file must be one", path);
  }
  std::string text = read_and_close(fd, kMaxConfigBytes);
  auto cfg = parse_mcp_config(text, path);
  if (cfg && (st.st_mode & 077)) {
    cfg->warnings.push_back(
        fmt::format("{} is readable by others and may hold tokens; run `chmod 600 {}`", path, path));
  }
  return cfg;
}

std::string user_mcp_config_path(const EnvMap& env) {
  if (auto it = env.find("OPPX_MCP_CONFIG"); it != env.end() && !it->second.empty()) return it->second;
  // The asking client's environment decides, not the daemon's own (it goes stale).
  auto get = [&](const char* k) -> std::string {
    auto it = env.find(k);
    return it != env.end() && !it->second.empty() && it->second[0] == '/' ? it->second : "";
  };
  if (std::string x = get("XDG_CONFIG_HOME"); !x.empty()) return x + "/oppx/mcp.json";
  if (std::string h = get("HOME"); !h.empty()) return h + "/.config/oppx/mcp.json";
  return paths::config_dir() + "/mcp.json";
}

std::string normal_path(std::string_view path) {
  std::vector<std::string_view> parts;
  for (std::size_t at = 0; at <= path.size();) {
    std::size_t end = std::min(path.find('/', at), path.size());
    std::string_view part = path.substr(at, end - at);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    at = end + 1;
  }
  std::string out;
  for (auto p : parts) out += "/" + std::string(p);
  return out.empty() ? "/" : out;
}

namespace {

// The real path (links followed, as chdir would) of an absolute path, else that of its nearest
// existing parent with the rest added as written. Never made lexical first: "link/.." is the
// folder above where the link points, not the folder the link is in.
std::string real_path(const std::string& path) {
  std::string existing = path, rest;
  for (;;) {
    if (char* real = ::realpath(existing.c_str(), nullptr)) {
      std::string out(real);
      std::free(real);
      return rest.empty() ? out : normal_path(out + rest);
    }
    if (existing == "/" || existing.empty()) return normal_path(path);
    rest = "/" + basename_of(existing) + rest;
    existing = dirname_of(existing);
  }
}

}  // namespace

void keep_cwd_in_repository(ConnectorDef& def, const std::string& root) {
  if (def.kind != ConnectorDef::Kind::kStdio || def.cwd.empty() || !def.unsupported.empty() || root.empty()) return;
  std::string where = fmt::format("{}: mcpServers.{}.cwd", def.file.empty() ? root + "/.mcp.json" : def.file, def.name);
  std::string fix = fmt::format(
      "Remove \"cwd\" from it in {} or name a folder inside the repository; a program kept elsewhere belongs in your "
      "own connectors (`oppx mcp add`), where you choose it.",
      file_name_of(def));
  if (def.cwd.find("${") != std::string::npos) {
    def.unsupported = fmt::format(
        "{}: a repository's connector cannot take its folder from a variable: where it would run, and so what, is "
        "known only when it starts, and cannot be shown or checked before you approve it",
        where);
    def.fix = std::move(fix);
    return;
  }
  std::string top = real_path(root);
  std::string base = def.file.empty() ? root : dirname_of(def.file);
  std::string folder = real_path(def.cwd[0] == '/' ? def.cwd : base + "/" + def.cwd);
  if (folder == top || folder.starts_with(top == "/" ? top : top + "/")) return;
  def.unsupported = fmt::format(
      "{}: its folder is {}, outside the repository {}: what runs there is neither shown nor checked before you "
      "approve it, so a repository's connector must run inside its repository",
      where, escape_controls(folder), escape_controls(top));
  def.fix = std::move(fix);
}

std::string file_name_of(const ConnectorDef& def) {
  if (def.file.empty()) return "mcp.json";
  auto slash = def.file.rfind('/');
  return slash == std::string::npos ? def.file : def.file.substr(slash + 1);
}

std::string ExpandError::describe() const {
  switch (problem) {
    case Problem::kLineBreak:
      return fmt::format(
          "it reads ${{{}}}, whose value in the environment of the oppx command that started it holds "
          "a line break or NUL, which no command line or header may carry",
          variable);
    case Problem::kUnclosed:
      return "its definition has a \"${\" without a closing \"}\"";
    case Problem::kNotAName:
      return "its definition has a ${…} around something that is not a variable name (letters, digits and _)";
    case Problem::kTooDeep:
      return fmt::format("its definition nests ${{NAME:-default}} defaults more than {} deep", kMaxDefaultNesting);
    case Problem::kUnset:
      break;
  }
  return fmt::format("it needs ${{{}}}, which is not set in the environment of the oppx command that started it",
                     variable);
}

namespace {

// Appends `s` expanded; `depth` counts the defaults it is inside of.
std::optional<ExpandError> expand_into(std::string& out, std::string_view s, const EnvMap& env, int depth) {
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] != '$' || i + 1 == s.size() || s[i + 1] != '{') {
      out += s[i++];
      continue;
    }
    if (depth > kMaxDefaultNesting) return ExpandError{"", ExpandError::Problem::kTooDeep};
    auto ref = reference_at(s, i);
    if (!ref) return ExpandError{"", ExpandError::Problem::kUnclosed};
    if (!variable_name(ref->name)) return ExpandError{"", ExpandError::Problem::kNotAName};
    auto it = env.find(ref->name);
    if (it != env.end() && !(ref->has_default && it->second.empty())) {
      if (it->second.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
        return ExpandError{std::string(ref->name), ExpandError::Problem::kLineBreak};
      }
      out += it->second;
    } else if (!ref->has_default) {
      return ExpandError{std::string(ref->name), ExpandError::Problem::kUnset};
    } else if (auto failed = expand_into(out, ref->fallback, env, depth + 1)) {
      return failed;
    }
    i = ref->end;
  }
  return std::nullopt;
}

// Calls `each(name)` for every reference in `s` and in its defaults, to kMaxDefaultNesting deep.
template <typename Each>
void each_reference(std::string_view s, Each&& each, int depth = 0) {
  for (auto open = s.find("${"); open != std::string_view::npos; open = s.find("${", open)) {
    auto ref = reference_at(s, open);
    if (!ref) return;
    if (variable_name(ref->name)) each(ref->name);
    if (ref->has_default && depth < kMaxDefaultNesting) each_reference(ref->fallback, each, depth + 1);
    open = ref->end;
  }
}

}  // namespace

boost::system::result<std::string, ExpandError> expand(std::string_view s, const EnvMap& env) {
  std::string out;
  if (auto failed = expand_into(out, s, env, 0)) return *failed;
  return {boost::system::in_place_value, std::move(out)};
}

std::vector<std::string> referenced_variables(const ConnectorDef& def) {
  std::vector<std::string> names;
  std::unordered_set<std::string_view> seen;  // views into `def`: a file may hold many names
  auto add = [&names, &seen](std::string_view name) {
    if (seen.insert(name).second) names.emplace_back(name);
  };
  auto scan = [&add](std::string_view s) { each_reference(s, add); };
  scan(def.command);
  for (auto& a : def.args) scan(a);
  scan(def.cwd);
  for (auto& [k, v] : def.env) scan(v);
  scan(def.url);
  for (auto& [k, v] : def.headers) scan(v);
  scan(def.oauth.client_id);
  scan(def.oauth.client_secret);
  return names;
}

}  // namespace oppx::daemon
