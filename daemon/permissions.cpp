// PermissionStore: the rules of each project in a StateFile, {"projects": {"<root>": {"allow":
// [...], "deny": [...]}}}; the judging is pure over what the file holds when asked.
#include "daemon/permissions.h"

#include "common/shell_words.h"
#include "common/text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <span>

namespace oppx::daemon {

namespace json = boost::json;

namespace {

std::vector<std::string> strings_of(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const json::value* a = o.if_contains(key); a && a->is_array()) {
    for (const auto& v : a->as_array()) {
      if (v.is_string() && !rule_problem(v.as_string())) out.emplace_back(v.as_string());
    }
  }
  return out;
}

// Takes every copy of `rule` off `list`; false when there was none.
bool erase_rule(json::array& list, const std::string& rule) {
  std::size_t before = list.size();
  for (auto it = list.begin(); it != list.end();) {
    it = it->is_string() && it->as_string() == rule ? list.erase(it) : it + 1;
  }
  return list.size() != before;
}

bool tool_rule_matches(std::string_view rule, const std::string& connector, const std::string& tool) {
  if (rule.rfind("run:", 0) == 0) return false;
  auto dot = rule.find('.');
  if (rule.substr(0, dot) != connector) return false;
  std::string_view what = rule.substr(dot + 1);
  return what == "*" || what == tool;
}

// Options and programs that change what a program runs (another program, shell code, a config
// that names one): an allow rule never matches a command that has one, because the rule allowed
// the program, not whatever the option points it at. Each entry of a program's list is matched
// against every word after the program name (after git's subcommand, for git's own lists):
// "--long" also as "--long=value" and as an abbreviation of it ("--upload-p"), "-x" (one letter)
// also inside a cluster of short options ("-vo"), any other entry as that whole word. An empty
// list: the program itself is never allowed by a rule (it runs what its arguments say).
// Kept here, in one place, and in docs/protocol.md.
struct Risky {
  std::string_view program;
  std::vector<std::string_view> options;
};
const std::vector<Risky>& risky_programs() {
  static const std::vector<Risky> kRisky = {
      // Wrappers: they run the command in their arguments.
      {"env", {}},
      {"sudo", {}},
      {"doas", {}},
      {"su", {}},
      {"runuser", {}},
      {"pkexec", {}},
      {"nice", {}},
      {"ionice", {}},
      {"timeout", {}},
      {"nohup", {}},
      {"command", {}},
      {"exec", {}},
      {"builtin", {}},
      {"eval", {}},
      {"source", {}},
      {".", {}},
      {"xargs", {}},
      {"parallel", {}},
      {"time", {}},
      {"stdbuf", {}},
      {"setsid", {}},
      {"chroot", {}},
      {"unshare", {}},
      {"nsenter", {}},
      {"flock", {}},
      {"watch", {}},
      {"strace", {}},
      {"ltrace", {}},
      {"script", {}},
      {"taskset", {}},
      {"chrt", {}},
      {"busybox", {}},
      {"systemd-run", {}},
      {"bwrap", {}},
      {"firejail", {}},
      {"sg", {}},
      // sed's e command and s///e flag run shell commands, awk's system() and | do: telling a
      // program text's commands from its data needs their own parsers, so they are always asked.
      {"sed", {}},
      {"awk", {}},
      {"gawk", {}},
      {"mawk", {}},
      {"nawk", {}},
      // Shells and interpreters given their program as an argument.
      {"sh", {"-c"}},
      {"bash", {"-c", "--rcfile", "--init-file"}},
      {"dash", {"-c"}},
      {"zsh", {"-c"}},
      {"ksh", {"-c"}},
      {"fish", {"-c", "--command", "--init-command"}},
      {"python", {"-c"}},
      {"python3", {"-c"}},
      {"perl", {"-e", "-E"}},
      {"ruby", {"-e"}},
      {"node", {"-e", "-p", "--eval", "--print"}},
      // Options that name a program to run or a config that does.
      {"ssh", {"-o", "-F"}},
      {"scp", {"-o", "-F", "-S"}},
      {"sftp", {"-o", "-F", "-S", "-D"}},
      {"rsync", {"-e", "--rsh", "--rsync-path"}},
      {"find", {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}},
      {"rg", {"--pre"}},
      {"tar",
       {"-I", "-F", "--to-command", "--use-compress-program", "--checkpoint-action", "--info-script",
        "--new-volume-script", "--rsh-command", "--rmt-command"}},
      {"zip", {"-TT", "--unzip-command"}},
  };
  return kRisky;
}
// git: the global options before the subcommand that point it at other config, repository or
// programs (-C too: a folder in the workspace may hold a planted bare repository whose config runs
// a program); then, per subcommand, its options that run a program ("*": always asked, as config
// can set an alias or core.sshCommand that runs a program later).
const std::vector<std::string_view> kGitGlobalRisky = {"-c",        "--config-env", "--exec-path",
                                                       "--git-dir", "--work-tree",  "-C"};
const std::vector<Risky>& risky_git_subcommands() {
  static const std::vector<Risky> kSub = {
      {"fetch", {"-u", "--upload-pack"}},
      {"pull", {"--upload-pack"}},
      {"clone", {"-u", "--upload-pack", "-c", "--config", "--template"}},
      {"ls-remote", {"-u", "--upload-pack", "--exec"}},
      {"push", {"--receive-pack", "--exec"}},
      {"send-pack", {"--receive-pack", "--exec"}},
      {"archive", {"--exec"}},
      {"rebase", {"-x", "--exec"}},
      {"difftool", {"-x", "--extcmd"}},
      {"grep", {"-O", "--open-files-in-pager"}},
      {"submodule", {"foreach"}},
      {"bisect", {"run"}},
      {"config", {"*"}},
      {"filter-branch", {"*"}},
  };
  return kSub;
}
// git's global options that take the next word as their value.
bool git_global_takes_value(std::string_view w) {
  return w == "-C" || w == "-c" || w == "--git-dir" || w == "--work-tree" || w == "--namespace" ||
         w == "--super-prefix" || w == "--config-env" || w == "--list-cmds";
}

bool option_matches(std::string_view word, std::string_view option) {
  if (option == "*") return true;
  if (option.size() > 2 && option.substr(0, 2) == "--") {
    std::string_view name = word.substr(0, word.find('='));
    return name.size() > 2 && name.substr(0, 2) == "--" && option.substr(0, name.size()) == name;
  }
  if (option.size() == 2 && option[0] == '-')
    return word.size() >= 2 && word[0] == '-' && word[1] != '-' && word.find(option[1], 1) != std::string_view::npos;
  return word == option;
}

std::optional<std::string> risky_option(std::string_view program, std::span<const std::string> args,
                                        const std::vector<std::string_view>& options) {
  for (const auto& a : args) {
    for (auto o : options) {
      if (option_matches(a, o))
        return o == "*" ? fmt::format("`{}` can change what runs later", program)
                        : fmt::format("`{} {}` can make it run another program", program, escape_controls(a));
    }
  }
  return std::nullopt;
}

// Where git's subcommand is: after its global options and their values.
std::size_t git_subcommand_at(const std::vector<std::string>& words, std::size_t program_at) {
  std::size_t k = program_at + 1;
  while (k < words.size() && words[k].size() > 1 && words[k][0] == '-') {
    k += git_global_takes_value(words[k]) ? 2 : 1;
  }
  return k;
}

// Why a plain command may not be allowed by any rule, or nothing.
std::optional<std::string> why_never_allowed(const std::vector<std::string>& words) {
  std::string_view program = program_name(words[0]);
  std::span<const std::string> args(words.begin() + 1, words.end());
  if (program == "git") {
    std::size_t sub = git_subcommand_at(words, 0);
    if (auto why = risky_option(program, args.first(std::min(sub, words.size()) - 1), kGitGlobalRisky)) return why;
    if (sub >= words.size()) return std::nullopt;
    for (const auto& r : risky_git_subcommands()) {
      if (r.program == words[sub]) return risky_option(fmt::format("git {}", r.program), args.subspan(sub), r.options);
    }
    return std::nullopt;
  }
  for (const auto& r : risky_programs()) {
    if (r.program != program) continue;
    if (r.options.empty()) return fmt::format("`{}` runs the command in its arguments", program);
    return risky_option(program, args, r.options);
  }
  return std::nullopt;
}

// A rule's words: run:<words>, read as the shell would.
ShellParse rule_words(std::string_view rule) {
  if (rule.rfind("run:", 0) != 0) return {};
  return parse_shell(rule.substr(4));
}

// An allow rule matches a plain command whose words start with the rule's words, the program
// word for word (`run:git` does not allow `./git`).
bool allow_matches(std::string_view rule, const std::vector<std::string>& words) {
  ShellParse r = rule_words(rule);
  if (!r.plain()) return false;
  const auto& want = r.commands[0];
  return words.size() >= want.size() && std::equal(want.begin(), want.end(), words.begin());
}

// A deny rule matches a command that holds its program (by name, wherever it stands: after
// `sudo`, `env X=1`, `xargs`, a path) followed, in order and not necessarily next to each
// other, by the rule's other words; git's global options and their values are skipped first.
bool deny_words_match(const std::vector<std::string>& want, const std::vector<std::string>& words) {
  if (want.empty()) return false;
  bool by_path = want[0].find('/') != std::string::npos;
  for (std::size_t p = 0; p < words.size(); ++p) {
    if (by_path ? words[p] != want[0] : program_name(words[p]) != want[0]) continue;
    std::size_t k = program_name(words[p]) == "git" ? git_subcommand_at(words, p) : p + 1;
    std::size_t next = 1;
    for (; k < words.size() && next < want.size(); ++k) {
      if (words[k] == want[next]) ++next;
    }
    if (next == want.size()) return true;
  }
  return false;
}

bool deny_matches(std::string_view rule, const std::vector<std::vector<std::string>>& commands) {
  ShellParse r = rule_words(rule);
  for (const auto& want : r.commands) {
    for (const auto& words : commands) {
      if (deny_words_match(want, words)) return true;
    }
  }
  return false;
}

// The commands a line runs, with those in the program text of `sh -c …` and `eval …` read too.
void add_shell_programs(ShellParse& p) {
  for (std::size_t n = 0; n < p.commands.size() && n < 64; ++n) {
    const auto words = p.commands[n];
    for (std::size_t k = 0; k < words.size(); ++k) {
      std::string_view name = program_name(words[k]);
      std::string code;
      if (name == "eval") {
        for (std::size_t j = k + 1; j < words.size(); ++j) code += words[j] + " ";
      } else if (name == "sh" || name == "bash" || name == "dash" || name == "zsh" || name == "ksh" || name == "su") {
        for (std::size_t j = k + 1; j + 1 < words.size(); ++j) {
          if (option_matches(words[j], "-c")) {
            code = words[j + 1];
            break;
          }
        }
      }
      if (code.empty()) continue;
      ShellParse inner = parse_shell(code);
      for (auto& c : inner.commands) p.commands.push_back(std::move(c));
      if (!inner.complete() && p.complete()) p.incomplete = inner.incomplete;
    }
  }
}

std::string joined(const std::vector<std::string>& reasons) {
  std::string out;
  for (const auto& r : reasons) out += (out.empty() ? "" : "; ") + r;
  return out;
}

// Deny fails closed: of a rules file that cannot be trusted, the deny rules still count (whoever
// wrote them can only have taken something away); its allow rules do not.
std::optional<StateFile::Kept> deny_rules_only(const json::value& doc) {
  const json::value* projects = doc.as_object().if_contains("projects");
  if (!projects || !projects->is_object()) return std::nullopt;
  json::object kept;
  std::size_t n = 0;
  for (const auto& [root, p] : projects->as_object()) {
    if (!p.is_object()) continue;
    json::array deny;
    for (auto& rule : strings_of(p.as_object(), "deny")) deny.emplace_back(rule);
    if (deny.empty()) continue;
    n += deny.size();
    kept[root] = json::object{{"allow", json::array{}}, {"deny", std::move(deny)}};
  }
  if (n == 0) return std::nullopt;
  return StateFile::Kept{
      json::object{{"version", 1}, {"projects", std::move(kept)}},
      fmt::format("its {} still appl{} (written anew, 0600), but none of its allow rules do (oppx asks instead). "
                  "Allow them again with `oppx permissions allow RULE`",
                  n == 1 ? "deny rule" : fmt::format("{} deny rules", n), n == 1 ? "ies" : "y")};
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kAllow:
      return "allow";
    case Verdict::kDeny:
      return "deny";
    case Verdict::kAsk:
      break;
  }
  return "ask";
}

PermissionStore::PermissionStore(std::string path, Worker* worker)
    : file_(std::move(path), "the permission rules file",
            "none of its rules apply any more (oppx asks instead). Set them again with `oppx permissions allow "
            "RULE` or `oppx permissions deny RULE`",
            "projects", worker) {
  file_.keep_when_set_aside(deny_rules_only);
}

Rules PermissionStore::rules(const std::string& project) {
  file_.load();
  Rules r;
  json::object* projects = file_.section(false);
  const json::value* p = projects ? projects->if_contains(project) : nullptr;
  if (!p || !p->is_object()) return r;
  r.allow = strings_of(p->as_object(), "allow");
  r.deny = strings_of(p->as_object(), "deny");
  return r;
}

void PermissionStore::add(const std::string& project, const std::string& rule, bool allow, Changed done) {
  if (auto why = rule_problem(rule)) return done(*why);
  file_.load();
  json::object* projects = file_.section(true);
  if (!projects) return done(fmt::format("{}: \"projects\" is not an object; move the file away", file_.path()));
  json::value& p = (*projects)[project];
  if (!p.is_object()) p = json::object{};
  auto list = [&](const char* key) -> json::array& {
    json::value& v = p.as_object()[key];
    if (!v.is_array()) v = json::array{};
    return v.as_array();
  };
  // Both made first: inserting a key into a json::object may move its other values.
  list("allow");
  list("deny");
  json::array& into = list(allow ? "allow" : "deny");
  json::array& other = list(allow ? "deny" : "allow");
  bool was_other = erase_rule(other, rule);
  bool present = std::any_of(into.begin(), into.end(), [&](const json::value& v) { return v == json::value(rule); });
  if (present && !was_other) return done(false);
  if (!present) into.emplace_back(rule);
  save(std::move(done));
}

void PermissionStore::save(Changed done) {
  file_.save([done = std::move(done)](boost::system::result<void, std::string> r) {
    if (!r) return done(r.error());
    done(true);
  });
}

void PermissionStore::remove(const std::string& project, const std::string& rule, Changed done) {
  file_.load();
  json::object* projects = file_.section(false);
  json::value* p = projects ? projects->if_contains(project) : nullptr;
  if (!p || !p->is_object()) return done(false);
  bool removed = false;
  for (const char* key : {"allow", "deny"}) {
    json::value* list = p->as_object().if_contains(key);
    if (!list || !list->is_array()) continue;
    removed = erase_rule(list->as_array(), rule) || removed;
  }
  if (!removed) return done(false);
  save(std::move(done));
}

Judgement PermissionStore::judge_tool(const std::string& project, const std::string& connector, const std::string& tool,
                                      bool read_only, const std::vector<std::string>& session) {
  Rules r = rules(project);
  for (const auto& rule : r.deny) {
    if (tool_rule_matches(rule, connector, tool)) return {Verdict::kDeny, rule, "denied by the rule " + rule};
  }
  for (const auto& rule : r.allow) {
    if (tool_rule_matches(rule, connector, tool)) return {Verdict::kAllow, rule, "allowed by the rule " + rule};
  }
  for (const auto& rule : session) {
    if (tool_rule_matches(rule, connector, tool))
      return {Verdict::kAllow, rule, "allowed for this session by the rule " + rule};
  }
  if (read_only) return {Verdict::kAllow, "", "it only reads (the connector marks it readOnlyHint)"};
  return {Verdict::kAsk, "", "it may change something and no rule allows it"};
}

Judgement PermissionStore::judge_command(const std::string& project, const std::string& command,
                                         const std::vector<std::string>& session) {
  std::string_view text = command;
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  ShellParse p = parse_shell(text);
  add_shell_programs(p);
  Rules r = rules(project);
  for (const auto& rule : r.deny) {
    if (deny_matches(rule, p.commands)) return {Verdict::kDeny, rule, "denied by the rule " + rule};
  }
  if (!p.complete())
    return {Verdict::kAsk, "", "oppx cannot read it as the shell would (" + p.incomplete + "), so no rule allows it"};
  if (!p.plain()) {
    std::string why = p.not_plain.empty() ? "it is no command" : joined(p.not_plain);
    return {Verdict::kAsk, "", "it is not one plain command (" + why + "), which no rule allows without asking"};
  }
  const auto& words = p.commands[0];
  auto allowed = [&](const std::string& rule, std::string_view how) -> std::optional<Judgement> {
    if (!allow_matches(rule, words)) return std::nullopt;
    if (auto why = why_never_allowed(words))
      return Judgement{Verdict::kAsk, "", "the rule " + rule + " matches, but " + *why + ", which no rule allows"};
    return Judgement{Verdict::kAllow, rule, std::string(how) + rule};
  };
  for (const auto& rule : r.allow) {
    if (auto j = allowed(rule, "allowed by the rule ")) return *j;
  }
  for (const auto& rule : session) {
    if (auto j = allowed(rule, "allowed for this session by the rule ")) return *j;
  }
  return {Verdict::kAsk, "", "no rule allows this command"};
}

}  // namespace oppx::daemon
