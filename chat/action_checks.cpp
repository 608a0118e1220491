// The checks on what the model named at a step: a usable action, a denied tool, a tool's
// arguments, a repeated call.
#include "chat/action_checks.h"
#include "proto/decode.h"

#include "chat/arguments.h"
#include "common/shell_words.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace oppx::chat {

namespace json = boost::json;

namespace {

using proto::string_field;

bool has_arguments(const json::value& schema) {
  if (!schema.is_object()) return false;
  const json::value* p = schema.as_object().if_contains("properties");
  return p && p->is_object() && !p->as_object().empty();
}

// Object keys sorted at every level.
json::value canonical(const json::value& v) {
  if (v.is_object()) {
    std::vector<std::pair<std::string, json::value>> items;
    for (const auto& [k, x] : v.as_object()) items.emplace_back(std::string(k), canonical(x));
    std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    json::object o;
    for (auto& [k, x] : items) o[k] = std::move(x);
    return o;
  }
  if (v.is_array()) {
    json::array a;
    for (const auto& x : v.as_array()) a.push_back(canonical(x));
    return a;
  }
  return v;
}

}  // namespace

std::optional<json::value> find_object(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (!ec) return v;
  auto open = text.find('{');
  auto close = text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  v = json::parse(text.substr(open, close - open + 1), ec);
  if (ec) return std::nullopt;
  return v;
}

std::string reply_of(const json::object& action) {
  std::string text = string_field(action, "text");
  if (text.empty()) text = string_field(action, "reply");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return {};
  return text;
}

std::string unusable(const std::optional<json::value>& answer, const std::string& name, const ActionsOffered& offered) {
  if (!answer || !answer->is_object() || name.empty())
    return "it was not one JSON object with an \"action\" from the list";
  const json::object& a = answer->as_object();
  auto needs = [&](std::string_view field, std::string_view what) {
    return string_field(a, field).empty() ? fmt::format("{} needs {} in \"{}\", and it had none", name, what, field)
                                          : std::string();
  };
  if (name == "reply")
    return reply_of(a).empty() ? std::string("reply needs the whole answer in \"text\", and it had none")
                               : std::string();
  if (name == "read") return needs("path", "the file's path");
  if (name == "grep") return needs("pattern", "a regular expression");
  if (name == "run" && offered.run) return needs("command", "the shell command");
  if (name == "search_tools" && offered.search) return needs("query", "a few words saying what the tool does");
  if ((name == "browser" && offered.browser) || offered.tool(name)) return {};
  return fmt::format("{} is not an action you can take now; pick one from the list", cut_text(name, 100));
}

bool is_denied(const std::vector<std::string>& denied, const std::string& name) {
  return std::find(denied.begin(), denied.end(), name) != denied.end();
}

std::string denied_text(const DaemonTools::Verdict& verdict) {
  return fmt::format("not run: {} (`oppx permissions remove {}` lifts it)", verdict.why, shell_quote(verdict.rule));
}

Refusal refuse_denied(const std::string& name, DaemonTools& daemon) {
  ToolInfo tool;
  std::size_t dot = name.find('.');
  tool.connector = name.substr(0, dot);
  tool.name = name.substr(dot + 1);
  Refusal r{ActionRecord{name, {}, "declined", "", false}, "", false};
  DaemonTools::Verdict v = daemon.judge_tool(tool);
  if (v.decision == "deny") {
    r.record.text = denied_text(v);
    r.model_text = fmt::format("{} was not run: {}. Do not try it again.", name, r.record.text);
    return r;
  }
  // The rule went away since the list was made.
  r.record.text = "not run: it was denied when this step's list was made; it is offered again now";
  r.model_text = fmt::format("{} was not run: {}.", name, r.record.text);
  r.offered_again = true;
  return r;
}

WrittenArguments write_arguments(const ToolInfo& tool, const ArgumentsModel& model) {
  if (!has_arguments(tool.input_schema)) return {json::object{}, "", std::nullopt};
  const std::string ask = fmt::format(
      "Write the arguments of {} as one JSON object, and nothing else.\nWhat it does: {}\nIts input schema: {}",
      tool.full_name(), tool.description.empty() ? "(no description)" : tool.description,
      proto::json_text(tool.input_schema));
  WrittenArguments out;
  // An answer checked against the tool's own schema: a 200 may carry unconstrained text.
  auto usable = [&](const json::value& answer) {
    json::object args = clean_arguments(answer, tool.input_schema);
    auto why = check_arguments(args, tool.input_schema);
    if (why) {
      out.problem = *why;
      return false;
    }
    out.arguments = std::move(args);
    out.problem.clear();
    return true;
  };
  json::object body{
      {"messages", model.messages(ask)},
      {"response_format", json::object{{"type", "json_schema"},
                                       {"json_schema", json::object{{"name", "arguments"},
                                                                    {"schema", simplify_schema(tool.input_schema)},
                                                                    {"strict", true}}}}}};
  model.fit_context(ask.size() + 64);
  auto r = model.complete(std::move(body));
  if (!r && r.error().kind != "refused") {
    out.error = r.error();
    return out;
  }
  if (r) {
    if (auto v = find_object(r->content)) {
      if (usable(*v)) return out;
    } else {
      out.problem = "the answer was not a JSON object";
    }
  } else {
    out.problem = "the server refused the schema (" + r.error().message + ")";
  }
  // Unconstrained, checked here; twice at most.
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string again = ask + "\nAnswer with the JSON object only.";
    if (attempt > 0) again += " Your last answer was not usable: " + out.problem + ".";
    auto u = model.complete(json::object{{"messages", model.messages(again)}});
    if (!u) {
      out.error = u.error();
      return out;
    }
    auto v = find_object(u->content);
    if (!v || !v->is_object()) {
      out.problem = "the answer was not a JSON object";
      continue;
    }
    if (usable(*v)) return out;
  }
  return out;
}

std::string call_key(const std::string& name, const json::object& arguments) {
  return name + " " + proto::json_text(canonical(arguments));
}

std::string repeated(const ToolInfo& tool, const std::string& key, const std::set<std::string>& turn_calls,
                     const PageGuard& page_guard) {
  if (tool.connector != kBrowserConnector) {
    if (!turn_calls.count(key)) return {};
    return "the same call with the same arguments was already made in this turn; its result is above";
  }
  switch (page_guard.check(key, tool.read_only)) {
    case PageGuard::Verdict::kRun:
      return {};
    case PageGuard::Verdict::kRepeat:
      return "it only reads, and nothing changed the page since the same call above; its result is above";
    case PageGuard::Verdict::kLoop:
      return fmt::format(
          "a loop: the same call ran {} times in a row; look at the page (a snapshot) and do something else",
          PageGuard::kMaxInARow);
  }
  return {};
}

}  // namespace oppx::chat
