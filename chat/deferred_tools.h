// Tool search in the agent: when the connector tools it could offer would take more than a share
// of the model's context (config.json "tool_search_share", 10% unless set), or always when the
// user says so ("tool_search": "always"), the prompt names each connector with its tool count and
// a few tool names instead of every tool, and the action `search_tools` finds tools through the
// daemon's index (tools/search). What it finds, and the tools a connector pins ("alwaysLoad"),
// are actions the model can name; found ones stay for the rest of the conversation (the newest
// kMaxFound). Which tools exist never depends on what the model writes: a tool not found yet is
// still called, judged and asked about like any other.
#pragma once

#include "chat/daemon_tools.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oppx::chat {

inline constexpr std::string_view kSearchAction = "search_tools";

struct ToolSearchSettings {
  enum class Mode { kAuto, kAlways, kNever } mode = Mode::kAuto;
  int share_percent = 10;  // auto: search once the list would take more than this share of the context
};

// config.json's "tool_search" ("auto", "always" or "never") and "tool_search_share" (1 to 100);
// what is wrong in them goes to `problem`, and the default stands.
ToolSearchSettings tool_search_settings(std::string& problem);

// The context assumed when the model server does not say its own: the smallest one oppx is made for.
inline constexpr std::int64_t kAssumedContext = 32'768;

class DeferredTools {
 public:
  static constexpr std::size_t kMaxFound = 24;

  explicit DeferredTools(ToolSearchSettings settings = {}) : settings_(settings) {}
  void set_settings(ToolSearchSettings s) { settings_ = s; }
  const ToolSearchSettings& settings() const { return settings_; }

  // Decides from the tools offered now whether they are searched for rather than listed.
  void plan(const std::vector<const ToolInfo*>& offered, std::optional<std::int64_t> context);
  bool searching() const { return searching_; }
  std::int64_t list_tokens() const { return list_tokens_; }  // what the whole list would take

  // Whether `t` is listed in the prompt and named in the action enum: every tool when not
  // searching, else one its connector pins or one found.
  bool listed(const ToolInfo& t) const;
  // The prompt's connector section while searching: how to search, each connector with its
  // count and a few of its tools' names, and the pinned tools' lines.
  std::string prompt_text(const std::vector<const ToolInfo*>& offered) const;

  // What one search_tools action tells the model, and the tools it made actions.
  struct Found {
    std::string model_text;  // untrusted lines included, marked by the caller
    std::vector<std::string> names;
    std::string error;  // the daemon failed
  };
  // Asks the daemon, keeps the hits the model may call now (`callable`), and lists them.
  // `context`: the user's message of this turn, which names the service a short query may not.
  Found search(DaemonTools& daemon, const std::string& query, const std::string& context,
               const std::function<const ToolInfo*(const std::string&)>& callable);
  void forget_found() { found_.clear(); }

 private:
  ToolSearchSettings settings_;
  bool searching_ = false;
  std::int64_t list_tokens_ = 0;
  std::vector<std::string> found_;  // full names, oldest first
};

}  // namespace oppx::chat
