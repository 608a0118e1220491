// oppx completion bash|zsh: a completion script made from the command table (each group's
// commands, each command's flags as its usage names them, the words a usage offers), and the
// hidden `oppx __complete connectors` the scripts call for connector names: it asks a running
// daemon only (never starts one, 1 s at most) and prints nothing when none answers.
#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "proto/decode.h"
#include "proto/mcp_api.h"
#include "proto/mcp_results.h"

#include <boost/json/object.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>

namespace oppx::cli {

namespace {

namespace json = boost::json;

// What the scripts know of one command: the words it is typed as ("mcp get", "-p").
struct Completed {
  std::string key;
  std::vector<std::string> flags;   // every flag its usage names, then --help
  std::vector<std::string> valued;  // those followed by a value ("--timeout SECONDS")
  std::string first;                // its first argument: "connectors", "help", or words to offer
};

bool is_flag(std::string_view t) {
  return t.size() > 1 && t[0] == '-' && t != "--" && (std::isalnum(static_cast<unsigned char>(t[1])) || t[1] == '-');
}

// A usage cut into words and the brackets around them: "[--timeout SECONDS]" is "[", "--timeout",
// "SECONDS", "]".
std::vector<std::string> usage_tokens(std::string_view usage) {
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) out.push_back(std::exchange(word, {}));
  };
  for (char c : usage) {
    if (c == ' ' || c == '[' || c == ']') {
      flush();
      if (c != ' ') out.emplace_back(1, c);
    } else {
      word += c;
    }
  }
  flush();
  return out;
}

// Flags as the table names them: "--timeout", "-e", "--url=…" as "--url". Global options come
// from the overview's option list ("  -h, --help   …").
std::vector<std::string> flags_in(std::string_view text, std::vector<std::string>* valued = nullptr) {
  std::vector<std::string> out;
  std::vector<std::string> tokens = usage_tokens(text);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == "--") break;  // what follows is another program's command line
    std::string t = tokens[i];
    while (!t.empty() && (t.back() == ',' || t.back() == '.')) t.pop_back();
    if (!is_flag(t)) continue;
    bool takes_value = t.find('=') != std::string::npos;
    t = t.substr(0, t.find('='));
    // Its value is a placeholder: `<url>`, or in capitals (`SECONDS`, `KEY=VALUE`); in an option
    // list the words after a flag are its description.
    if (!takes_value && i + 1 < tokens.size()) {
      const std::string& next = tokens[i + 1];
      takes_value = next.starts_with('<') || (!next.empty() && std::isupper(static_cast<unsigned char>(next[0])) &&
                                              std::all_of(next.begin(), next.end(), [](char ch) {
                                                return std::isupper(static_cast<unsigned char>(ch)) ||
                                                       std::isdigit(static_cast<unsigned char>(ch)) || ch == '_' ||
                                                       ch == '=';
                                              }));
    }
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
    if (takes_value && valued && std::find(valued->begin(), valued->end(), t) == valued->end()) valued->push_back(t);
  }
  return out;
}

// The first argument's completion: a connector's name in the mcp group, the commands for help,
// the words of "bash|zsh".
std::string first_argument(const Command& c) {
  std::vector<std::string> tokens = usage_tokens(c.usage);
  auto it = std::find_if(tokens.begin(), tokens.end(), [](const std::string& t) { return t != "[" && !is_flag(t); });
  if (it == tokens.end()) return {};
  if (c.group == "mcp" && (*it == "<name>" || *it == "name")) return "connectors";
  if (c.group.empty() && c.name == "help") return "help";
  if (it->find('|') != std::string::npos && it->find_first_of("<>'\"$") == std::string::npos) {
    std::string words = *it;
    std::replace(words.begin(), words.end(), '|', ' ');
    return words;
  }
  return {};
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

// The shell functions both scripts share: they use only what bash and zsh read alike (case,
// local, [ ], $(( ))).
std::string shared_functions() {
  std::vector<std::string> top, groups;
  std::vector<Completed> commands;
  for (const Command& c : command_table()) {
    if (c.hidden) continue;
    std::string word(c.group.empty() ? c.name : c.group);
    if (std::find(top.begin(), top.end(), word) == top.end()) top.push_back(word);
    if (!c.group.empty() && std::find(groups.begin(), groups.end(), word) == groups.end()) groups.push_back(word);
    Completed done;
    done.key = c.group.empty() ? std::string(c.name)
                               : (c.name.empty() ? std::string(c.group) : fmt::format("{} {}", c.group, c.name));
    done.flags = flags_in(c.usage, &done.valued);
    done.flags.push_back("--help");
    done.first = first_argument(c);
    commands.push_back(std::move(done));
  }
  std::vector<std::string> global_valued;
  std::vector<std::string> globals = flags_in(overview_text().options, &global_valued);
  for (const char* f : {"-p", "-c", "--continue", "--resume"}) globals.push_back(f);

  std::string out = "_oppx_commands() {\n  case $1 in\n";
  out += fmt::format("    '') _oppx_reply='{}' ;;\n", join(top));
  for (const auto& g : groups) {
    std::vector<std::string> names;
    for (const Command& c : command_table())
      if (c.group == g && !c.hidden && !c.name.empty()) names.push_back(std::string(c.name));
    out += fmt::format("    '{}') _oppx_reply='{}' ;;\n", g, join(names));
  }
  out += "    *) _oppx_reply='' ;;\n  esac\n}\n";
  out += "_oppx_flags() {\n  case $1 in\n";
  out += fmt::format("    '') _oppx_reply='{}' ;;\n", join(globals));
  for (const auto& c : commands) out += fmt::format("    '{}') _oppx_reply='{}' ;;\n", c.key, join(c.flags));
  out += "    *) _oppx_reply='--help' ;;\n  esac\n}\n";
  out += "_oppx_valued() {\n  case $1 in\n";
  out += fmt::format("    '') _oppx_reply='{}' ;;\n", join(global_valued));
  for (const auto& c : commands)
    if (!c.valued.empty()) out += fmt::format("    '{}') _oppx_reply='{}' ;;\n", c.key, join(c.valued));
  out += "    *) _oppx_reply='' ;;\n  esac\n}\n";
  out += "_oppx_first() {\n  case $1 in\n";
  for (const auto& c : commands)
    if (!c.first.empty()) out += fmt::format("    '{}') _oppx_reply='{}' ;;\n", c.key, c.first);
  out += "    *) _oppx_reply='' ;;\n  esac\n}\n";
  out += R"sh(# _oppx_words CUR WORD...: the words typed between the program and the cursor decide what the
# word at the cursor can be. Sets _oppx_reply to the candidates, or to :connectors or :files.
_oppx_words() {
  local cur=$1 key= group= first= npos=0 skip= pending= w
  _oppx_sock=
  shift
  for w in "$@"; do
    if [ -n "$skip" ]; then
      [ "$skip" = socket ] && _oppx_sock=$w
      skip=
      continue
    fi
    if [ -z "$key" ]; then
      case $w in
        --socket) skip=socket ;;
        --socket=*) _oppx_sock=${w#--socket=} ;;
        -p|--print) key=-p ;;
        -c|--continue|--resume) key=chat ;;
        -*) ;;
        *)
          _oppx_commands "$w"
          [ -n "$_oppx_reply" ] && group=$w
          key=$w ;;
      esac
    elif [ "$w" = -- ]; then
      _oppx_reply=:files
      return
    elif [ -n "$group" ] && [ "$key" = "$group" ] && [ "${w#-}" = "$w" ]; then
      key="$group $w"
    else
      case $w in
        -*)
          _oppx_valued "$key"
          case " $_oppx_reply " in *" $w "*) skip=value ;; esac ;;
        *)
          [ $npos -eq 0 ] && first=$w
          npos=$((npos + 1)) ;;
      esac
    fi
  done
  if [ -n "$skip" ]; then
    _oppx_reply=
  elif [ -z "$key" ]; then
    case $cur in
      -*) _oppx_flags '' ;;
      *) _oppx_commands '' ;;
    esac
  elif [ -n "$group" ] && [ "$key" = "$group" ]; then
    case $cur in
      -*) _oppx_reply=--help ;;
      *) _oppx_commands "$group" ;;
    esac
  else
    case $cur in
      -*) _oppx_flags "$key" ;;
      *)
        _oppx_first "$key"
        pending=$_oppx_reply
        _oppx_reply=
        if [ $npos -eq 0 ]; then
          case $pending in
            help) _oppx_commands '' ;;
            connectors) _oppx_reply=:connectors ;;
            *) _oppx_reply=$pending ;;
          esac
        elif [ $npos -eq 1 ] && [ "$pending" = help ]; then
          _oppx_commands "$first"
        fi ;;
    esac
  fi
}
# Connector names from a running daemon (none is started for them), one per line.
_oppx_connectors() {
  if [ -n "$_oppx_sock" ]; then
    command "$_oppx_prog" --socket "$_oppx_sock" __complete connectors 2>/dev/null
  else
    command "$_oppx_prog" __complete connectors 2>/dev/null
  fi
}
)sh";
  return out;
}

constexpr std::string_view kBashHead =
    "# bash completion for oppx, made by `oppx completion bash` from its command table.\n"
    "# Load it with: source <(oppx completion bash); or install it as\n"
    "# ~/.local/share/bash-completion/completions/oppx\n";
constexpr std::string_view kBashDriver = R"sh(_oppx() {
  local cur=${COMP_WORDS[COMP_CWORD]} _oppx_reply name
  _oppx_prog=${COMP_WORDS[0]}
  command -v "$_oppx_prog" >/dev/null 2>&1 || _oppx_prog=oppx
  COMPREPLY=()
  _oppx_words "$cur" "${COMP_WORDS[@]:1:COMP_CWORD-1}"
  case $_oppx_reply in
    :files) compopt -o default 2>/dev/null ;;
    :connectors)
      # Read, not given to compgen -W, which would expand what a name holds.
      while IFS= read -r name; do
        case $name in "$cur"*) COMPREPLY+=("$name") ;; esac
      done < <(_oppx_connectors) ;;
    *) COMPREPLY=($(compgen -W "$_oppx_reply" -- "$cur")) ;;
  esac
}
complete -F _oppx oppx
)sh";

constexpr std::string_view kZshHead =
    "#compdef oppx\n"
    "# zsh completion for oppx, made by `oppx completion zsh` from its command table.\n"
    "# Load it with: source <(oppx completion zsh); or install it as _oppx in a folder of $fpath.\n";
constexpr std::string_view kZshDriver = R"sh(_oppx() {
  local _oppx_reply
  local -a candidates
  _oppx_prog=${words[1]}
  (( $+commands[$_oppx_prog] )) || [ -x "$_oppx_prog" ] || _oppx_prog=oppx
  _oppx_words "${words[CURRENT]}" "${(@)words[2,CURRENT-1]}"
  case $_oppx_reply in
    :files) _files ;;
    :connectors)
      candidates=(${(f)"$(_oppx_connectors)"})
      compadd -a candidates ;;
    *)
      candidates=(${=_oppx_reply})
      compadd -a candidates ;;
  esac
}
if [ "$funcstack[1]" = _oppx ]; then
  _oppx "$@"
else
  compdef _oppx oppx
fi
)sh";

int completion(Context& ctx) {
  const Command& self = *find_command("", "completion");
  if (ctx.args.size() != 1) return usage_error(self, "name one shell: bash or zsh");
  if (ctx.args[0] == "bash") {
    fmt::print("{}{}{}", kBashHead, shared_functions(), kBashDriver);
  } else if (ctx.args[0] == "zsh") {
    fmt::print("{}{}{}", kZshHead, shared_functions(), kZshDriver);
  } else {
    return usage_error(self, fmt::format("no completion for `{}`; oppx has one for bash and one for zsh", ctx.args[0]));
  }
  return kExitOk;
}

// A name goes into the shell's list only when the shell cannot read anything into it.
bool plain_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

int complete(Context& ctx) {
  if (ctx.args.size() != 1 || ctx.args[0] != "connectors") return kExitUsage;
  // Tab must not wait: no daemon is started, a frozen one gets 1 s.
  auto conn = connect_daemon(ctx.socket, Start::kNever, std::chrono::seconds(1));
  if (!conn) return kExitOk;
  auto r = conn->client.call(proto::kMcpList, json::object{}, std::chrono::seconds(1));
  if (!r) return kExitOk;
  auto list = proto::decode<proto::McpListResult>(*r);
  if (!list) return kExitOk;
  for (const auto& c : list->connectors)
    if (plain_name(c.name)) fmt::print("{}\n", c.name);
  return kExitOk;
}

}  // namespace

std::vector<Command> completion_commands() {
  return {
      {"", "completion", "bash|zsh", "Print a completion script for bash or zsh.",
       "Commands, their flags and, in `oppx mcp`, the names of your connectors (asked of a running\n"
       "daemon; none is started for it). Load it in your shell's start-up file:\n"
       "  source <(oppx completion bash)\n"
       "  source <(oppx completion zsh)\n"
       "The .deb installs both where bash-completion and zsh find them.",
       completion},
      {"", "__complete", "connectors", "The connector names a completion script offers, one per line.", "", complete,
       true},
  };
}

}  // namespace oppx::cli
