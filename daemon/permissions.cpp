// PermissionStore: the rules of each project in a StateFile, {"projects": {"<root>": {"allow":
// [...], "deny": [...]}}}; the judging is pure over what the file holds when asked.
#include "daemon/permissions.h"

#include "common/text.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

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

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
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

bool command_rule_matches(std::string_view rule, const std::string& command) {
  if (rule.rfind("run:", 0) != 0) return false;
  std::string prefix = trim(rule.substr(4));
  return command == prefix || (command.size() > prefix.size() && command.rfind(prefix, 0) == 0 &&
                               (command[prefix.size()] == ' ' || command[prefix.size()] == '\t'));
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
            "projects", worker) {}

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
  std::string cmd = trim(command);
  Rules r = rules(project);
  for (const auto& rule : r.deny) {
    if (command_rule_matches(rule, cmd)) return {Verdict::kDeny, rule, "denied by the rule " + rule};
  }
  if (cmd.find_first_of(";&|`<>\n\r") != std::string::npos || cmd.find("$(") != std::string::npos)
    return {Verdict::kAsk, "", "it chains commands or redirects, which no rule allows without asking"};
  for (const auto& rule : r.allow) {
    if (command_rule_matches(rule, cmd)) return {Verdict::kAllow, rule, "allowed by the rule " + rule};
  }
  for (const auto& rule : session) {
    if (command_rule_matches(rule, cmd)) return {Verdict::kAllow, rule, "allowed for this session by the rule " + rule};
  }
  return {Verdict::kAsk, "", "no rule allows this command"};
}

}  // namespace oppx::daemon
