// DeferredTools: whether the agent lists its tools or searches for them, the prompt's connector
// section while it searches, and one search_tools action.
#include "chat/deferred_tools.h"

#include "chat/agent.h"
#include "common/text.h"
#include "common/tool_text.h"
#include "common/user_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace oppx::chat {

namespace {

constexpr std::size_t kNamesShown = 4;  // tool names shown beside each connector
constexpr std::int64_t kAskedHits = 8;  // asked of the daemon; the callable ones are kept
constexpr std::size_t kKeptHits = 6;

}  // namespace

ToolSearchSettings tool_search_settings(std::string& problem) {
  ToolSearchSettings s;
  auto config = read_user_config();
  if (!config) {
    problem = config.error();
    return s;
  }
  if (const auto* v = config->if_contains("tool_search")) {
    std::string_view m = v->is_string() ? std::string_view(v->get_string()) : std::string_view();
    if (m == "auto") {
      s.mode = ToolSearchSettings::Mode::kAuto;
    } else if (m == "always") {
      s.mode = ToolSearchSettings::Mode::kAlways;
    } else if (m == "never") {
      s.mode = ToolSearchSettings::Mode::kNever;
    } else {
      problem = fmt::format(
          "{}: \"tool_search\" is one of \"auto\", \"always\" or \"never\"; \"auto\" holds until it "
          "is corrected",
          user_config_file());
    }
  }
  if (const auto* v = config->if_contains("tool_search_share")) {
    if (v->is_int64() && v->as_int64() >= 1 && v->as_int64() <= 100) {
      s.share_percent = static_cast<int>(v->as_int64());
    } else {
      problem = fmt::format("{}: \"tool_search_share\" is a percentage from 1 to 100; 10 holds until it is corrected",
                            user_config_file());
    }
  }
  return s;
}

void DeferredTools::plan(const std::vector<const ToolInfo*>& offered, std::optional<std::int64_t> context) {
  std::size_t chars = 0;
  for (const ToolInfo* t : offered) chars += t->line.size() + 3;  // "- " and the newline
  list_tokens_ = estimate_tokens(std::string(chars, 'x'));
  std::int64_t window = context && *context > 0 ? *context : kAssumedContext;
  switch (settings_.mode) {
    case ToolSearchSettings::Mode::kNever:
      searching_ = false;
      break;
    case ToolSearchSettings::Mode::kAlways:
      searching_ = !offered.empty();
      break;
    case ToolSearchSettings::Mode::kAuto:
      searching_ = list_tokens_ * 100 > window * settings_.share_percent;
      break;
  }
}

bool DeferredTools::listed(const ToolInfo& t) const {
  if (!searching_ || t.pinned) return true;
  return std::find(found_.begin(), found_.end(), t.full_name()) != found_.end();
}

std::string DeferredTools::prompt_text(const std::vector<const ToolInfo*>& offered) const {
  std::map<std::string, std::vector<const ToolInfo*>> by_connector;
  for (const ToolInfo* t : offered) by_connector[t->connector].push_back(t);
  std::string s = fmt::format(
      "\nConnector tools: these connectors run and offer {} tools, too many to list here. Find the ones a task "
      "needs with the action {} (\"query\": a few words saying what the tool does, e.g. \"list open pull "
      "requests\"); the tools it finds become actions you can take. A tool not listed here is not missing: search "
      "for it before saying it does not exist.\n",
      offered.size(), kSearchAction);
  for (const auto& [name, tools] : by_connector) {
    s += fmt::format("- {} ({} tool{}): ", name, tools.size(), tools.size() == 1 ? "" : "s");
    for (std::size_t i = 0; i < tools.size() && i < kNamesShown; ++i)
      s += (i ? ", " : "") + escape_controls(tools[i]->name);
    s += tools.size() > kNamesShown ? ", …\n" : "\n";
  }
  std::string pinned;
  for (const ToolInfo* t : offered)
    if (t->pinned) pinned += "- " + t->line + "\n";
  if (!pinned.empty())
    s += "Tools always at hand (pick one by its name as the action; you are asked for its arguments next):\n" + pinned;
  return s;
}

DeferredTools::Found DeferredTools::search(DaemonTools& daemon, const std::string& query, const std::string& context,
                                           const std::function<const ToolInfo*(const std::string&)>& callable) {
  Found f;
  std::vector<proto::ToolsSearchHit> hits;
  if (std::string why = daemon.search(query, context, kAskedHits, hits); !why.empty()) {
    f.error = why;
    f.model_text =
        fmt::format("{} failed: the daemon did not answer ({}). Try again, or reply without it.", kSearchAction, why);
    return f;
  }
  std::string lines;
  for (const auto& h : hits) {
    if (f.names.size() >= kKeptHits) break;
    const ToolInfo* t = callable(h.connector + "." + h.name);
    if (!t) continue;
    f.names.push_back(t->full_name());
    lines += "- " + t->line + "\n";
    std::erase(found_, t->full_name());
    found_.push_back(t->full_name());
  }
  if (found_.size() > kMaxFound) found_.erase(found_.begin(), found_.end() - kMaxFound);
  if (f.names.empty()) {
    f.model_text = fmt::format(
        "{} found no tool for \"{}\". Try other words (what the tool does, or its connector's name), or do the task "
        "with the other actions.",
        kSearchAction, cut_text(query, 200));
    return f;
  }
  f.model_text = fmt::format(
      "{} found for \"{}\" these tools, now actions you can take (pick one by its name; you are asked for its "
      "arguments next):\n{}",
      kSearchAction, cut_text(query, 200), lines);
  return f;
}

}  // namespace oppx::chat
