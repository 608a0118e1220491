// add_entry / remove_entry: the file is re-read right before the edit (a hand edit made since the
// last look is kept) and parsed by the same parser as at start, so an edit never turns a file the
// daemon reads into one it cannot. A file that does not parse is left alone, with its error.
#include "daemon/config_write.h"

#include "common/fs.h"
#include "common/text.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>
#include <boost/url/parse.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <set>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

void pretty(const json::value& v, std::string& out, int indent) {
  auto pad = [&](int n) { out.append(static_cast<std::size_t>(n) * 2, ' '); };
  if (const json::object* o = v.if_object()) {
    if (o->empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    std::size_t i = 0;
    for (auto& [k, val] : *o) {
      pad(indent + 1);
      out += json::serialize(json::string(k));
      out += ": ";
      pretty(val, out, indent + 1);
      out += ++i < o->size() ? ",\n" : "\n";
    }
    pad(indent);
    out += "}";
  } else if (const json::array* a = v.if_array()) {
    if (a->empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < a->size(); ++i) {
      pad(indent + 1);
      pretty((*a)[i], out, indent + 1);
      out += i + 1 < a->size() ? ",\n" : "\n";
    }
    pad(indent);
    out += "]";
  } else {
    out += proto::json_text(v);
  }
}

bool has_line_break(std::string_view s) { return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos; }

// A new repository .mcp.json: as git checks a file out (it holds references, not secrets).
constexpr int kNewRepositoryFileMode = 0644;

struct Loaded {
  json::object root;
  bool existed = false;
  std::string warning;
  int mode = 0600;  // to write it back with
};

// Where the edit goes: the link's target for the user's own file, else the path itself.
std::string edit_target(const std::string& path, bool users_file) {
  struct stat st {};
  if (!users_file || ::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return path;
  std::string target = real;
  std::free(real);
  return target;
}

boost::system::result<Loaded, EditError> load_for_edit(const std::string& path, bool users_file) {
  Loaded l;
  struct stat st {};
  if ((users_file ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) {
    if (errno != ENOENT) return EditError{"io", fmt::format("cannot read {}: {}", path, std::strerror(errno))};
    if (!users_file) l.mode = kNewRepositoryFileMode;
    return l;
  }
  if (S_ISLNK(st.st_mode)) {
    return EditError{"io", path +
                               " is a symbolic link; oppx does not write through links in a repository. Edit its "
                               "target by hand, or replace the link with a file"};
  }
  if (!S_ISREG(st.st_mode)) return EditError{"io", path + " is not a regular file; move it away and try again"};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return EditError{"io", fmt::format("cannot read {}: {}", path, std::strerror(errno))};
  std::string text = read_and_close(fd, kMaxConfigBytes);
  // The same checks and file:line:col errors as at start.
  if (auto cfg = parse_mcp_config(text, path); !cfg)
    return EditError{"io", cfg.error() + "; fix it (or move it away) and try again"};
  json::value v = json::parse(text);
  l.root = std::move(v.as_object());
  l.existed = true;
  if (!users_file) {
    l.mode = static_cast<int>(st.st_mode & 0777);  // a team's file keeps its mode
  } else if (st.st_mode & 077) {
    l.warning = fmt::format(
        "{} was readable by others (mode {:04o}) and may hold tokens; oppx wrote it back 0600 (as `chmod 600 {}` "
        "would)",
        path, st.st_mode & 07777, path);
  }
  return l;
}

boost::system::result<std::string, EditError> write_back(const std::string& path, const json::object& root,
                                                         std::string_view name, int mode) {
  std::string text = pretty_json(root);
  // Read back through the parser: what the daemon will load is exactly what was checked.
  auto cfg = parse_mcp_config(text, path);
  if (!cfg) return EditError{"invalid", cfg.error()};
  std::string canonical;
  for (auto& d : cfg->connectors) {
    if (d.name == name) canonical = d.canonical;
  }
  std::string dir = dirname_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (auto r = ensure_private_dir(dir); !r) return EditError{"io", r.error()};
  }
  if (auto r = atomic_write(path, text, mode); !r) return EditError{"io", r.error()};
  return {boost::system::in_place_value, canonical};
}

}  // namespace

std::string pretty_json(const json::value& v) {
  std::string out;
  pretty(v, out, 0);
  out += "\n";
  return out;
}

namespace {

// Why a URL (without ${VAR} references, which are checked once expanded) cannot be used, or "".
std::string url_problem(const std::string& url) {
  if (url.find("${") != std::string::npos) return "";
  auto u = boost::urls::parse_uri(url);
  if (!u)
    return url.find_first_of(" \t") != std::string::npos ? "it holds a space (write it as %20)"
                                                         : "it is not a valid URL";
  if (u->encoded_host().empty()) return "it has no host";
  if (u->has_port()) {
    // As written after the host's ':' (the parser keeps no port that is not a number).
    std::string_view auth = url;
    auth.remove_prefix(std::min(auth.size(), auth.find("://") + 3));
    auth = auth.substr(0, auth.find_first_of("/?#"));
    auth.remove_prefix(auth.find('@') == std::string_view::npos ? 0 : auth.find('@') + 1);
    auto colon = auth.rfind(':');
    auto bracket = auth.rfind(']');
    std::string_view port = colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket)
                                ? std::string_view()
                                : auth.substr(colon + 1);
    if (port.empty()) return "it has a ':' after the host but no port number";
    long number = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
    if (ec == std::errc::invalid_argument || end != port.data() + port.size())
      return fmt::format("its port \"{}\" is not a number", port);
    if (ec != std::errc() || number < 1 || number > 65535)
      return fmt::format("its port {} is not between 1 and 65535", port);
  }
  return "";
}

bool valid_env_name(std::string_view k) {
  if (k.empty() || (k[0] >= '0' && k[0] <= '9')) return false;
  return std::all_of(k.begin(), k.end(), [](char ch) {
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
  });
}

}  // namespace

boost::system::result<ConnectorDef, EditError> check_definition(std::string_view name, const json::value& entry) {
  if (!valid_name(name)) {
    std::string why = name.empty()                               ? "it is empty"
                      : name.size() > 64                         ? "it is longer than 64 characters"
                      : name.find(' ') != std::string_view::npos ? "it holds a space"
                      : name.find('/') != std::string_view::npos ? "it holds a slash"
                                                                 : "it holds other characters";
    return EditError{"invalid", fmt::format("the connector name \"{}\" cannot be used: {}; a name may hold only "
                                            "letters, digits, '-' and '_' (e.g. my-server)",
                                            escape_controls(name), why)};
  }
  auto def = parse_mcp_entry(name, entry);
  if (!def) {
    const EntryError& e = def.error();
    return EditError{"invalid", e.fix.empty() ? e.message : e.message + "; " + e.fix};
  }
  if (def->kind == ConnectorDef::Kind::kHttp && def->url.rfind("http://", 0) != 0 &&
      def->url.rfind("https://", 0) != 0) {
    return EditError{"invalid", fmt::format("the URL of {} must start with https:// (or http://); \"{}\" does not. "
                                            "oppx speaks streamable HTTP only",
                                            name, escape_controls(def->url))};
  }
  if (def->kind == ConnectorDef::Kind::kHttp && !has_line_break(def->url)) {
    if (std::string why = url_problem(def->url); !why.empty())
      return EditError{"invalid",
                       fmt::format("the URL of {} cannot be used: {}: \"{}\"", name, why, escape_controls(def->url))};
  }
  auto refuse = [&](std::string_view what) {
    return EditError{"invalid", fmt::format("{} of {} holds a line break or NUL; write it on one line", what, name)};
  };
  if (has_line_break(def->command)) return refuse("the command");
  for (auto& a : def->args) {
    if (has_line_break(a)) return refuse("an argument");
  }
  for (auto& [k, v] : def->env) {
    if (has_line_break(k) || k.find('=') != std::string::npos || k.empty())
      return refuse("the name of an environment variable");
    if (!valid_env_name(k))
      return EditError{"invalid", fmt::format("the environment variable name \"{}\" of {} cannot be used: a name "
                                              "holds only letters, digits and '_', and does not start with a digit",
                                              escape_controls(k), name)};
    if (has_line_break(v)) return refuse("the value of " + k);
  }
  if (has_line_break(def->url)) return refuse("the URL");
  std::set<std::string> header_names;  // HTTP header names are case-insensitive
  for (auto& [k, v] : def->headers) {
    if (!header_names.insert(lower(k)).second)
      return EditError{"invalid", fmt::format("{} has the header {} twice (names differing only in case are the "
                                              "same header); keep one",
                                              name, escape_controls(k))};
    if (k.empty() || k.find_first_of(" :\t\r\n") != std::string::npos)
      return EditError{"invalid", fmt::format("the header name \"{}\" of {} is not a valid HTTP header name",
                                              escape_controls(k), name)};
    if (has_line_break(v)) return refuse("the value of header " + k);
  }
  return std::move(*def);
}

boost::system::result<EditOutcome, EditError> add_entry(const std::string& given, std::string_view name,
                                                        const json::value& entry, bool force, bool users_file) {
  std::string path = edit_target(given, users_file);
  auto loaded = load_for_edit(path, users_file);
  if (!loaded) return loaded.error();
  json::value& servers = loaded->root["mcpServers"];
  if (!servers.is_object()) servers = json::object{};
  EditOutcome out;
  out.warning = loaded->warning;
  out.replaced = servers.as_object().contains(name);
  if (out.replaced && !force) {
    // Only your own file is followed through a link: not following means the repository's.
    return EditError{"exists", fmt::format("{} already has a connector named {}; to replace it, add --force "
                                           "(or remove it first with `oppx mcp remove {}{}`)",
                                           path, name, name, users_file ? "" : " --project")};
  }
  servers.as_object()[name] = entry;
  auto written = write_back(path, loaded->root, name, loaded->mode);
  if (!written) return written.error();
  out.canonical = *written;
  return out;
}

boost::system::result<EditOutcome, EditError> remove_entry(const std::string& given, std::string_view name,
                                                           bool users_file) {
  std::string path = edit_target(given, users_file);
  auto loaded = load_for_edit(path, users_file);
  if (!loaded) return loaded.error();
  json::value* servers = loaded->root.if_contains("mcpServers");
  if (!loaded->existed || !servers || !servers->is_object() || !servers->as_object().contains(name))
    return EditError{"not_found", fmt::format("{} has no connector named {}; `oppx mcp list` shows them", path, name)};
  servers->as_object().erase(name);
  EditOutcome out;
  out.warning = loaded->warning;
  out.replaced = true;
  auto written = write_back(path, loaded->root, name, loaded->mode);
  if (!written) return written.error();
  return out;
}

}  // namespace oppx::daemon
