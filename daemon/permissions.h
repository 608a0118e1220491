// Permission rules, per project (the repository root), in user state
// ($XDG_STATE_HOME/oppx/permissions.json, 0600; never read from a repository, so a repository
// cannot allow itself anything). The daemon judges each tool call and command from them: one set
// of rules for the terminal, the chat and editor plugins (docs/protocol.md, permissions/…). A
// file that cannot be trusted is set aside, but its deny rules still count (deny fails closed).
#pragma once

#include "daemon/state_file.h"
#include "proto/session_api.h"

#include <boost/system/result.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::daemon {

using proto::rule_problem;  // the rule forms (proto/session_api.h)

enum class Verdict { kAllow, kAsk, kDeny };
std::string_view verdict_name(Verdict v);

struct Judgement {
  Verdict verdict = Verdict::kAsk;
  std::string rule;  // the rule that decided, when one did
  std::string why;   // in words: "denied by the rule linear.*", "it only reads", …
};

struct Rules {
  std::vector<std::string> allow, deny;
};

class PermissionStore {
 public:
  // `worker`: where its writes go (state_file.h); without one they happen at once.
  explicit PermissionStore(std::string path, Worker* worker = nullptr);
  const std::string& path() const { return file_.path(); }
  const std::string& problem() const { return file_.problem(); }

  Rules rules(const std::string& project);
  // The change counts at once (rules() sees it); `done` gets whether there was one, once written.
  using Changed = std::function<void(boost::system::result<bool, std::string>)>;
  // Adds `rule` to the allow (or deny) list, taking it off the other; false when it was there.
  void add(const std::string& project, const std::string& rule, bool allow, Changed done);
  // False when the project had no such rule.
  void remove(const std::string& project, const std::string& rule, Changed done);

  // A deny rule wins over everything; then an allow rule (the project's, then `session`'s: rules
  // allowed for one session only, never saved); then a read-only tool runs; else ask.
  Judgement judge_tool(const std::string& project, const std::string& connector, const std::string& tool,
                       bool read_only, const std::vector<std::string>& session = {});
  // `run`, judged on the words the shell would pass (common/shell_words.h), not on the text: a deny
  // rule catches any spelling of its words, in every command of a compound line (deny wins); an
  // allow rule matches only one plain command whose words start with the rule's, and never one
  // with an option that changes what the program runs (git -c, find -exec, …: permissions.cpp).
  // What cannot be read whole is asked.
  Judgement judge_command(const std::string& project, const std::string& command,
                          const std::vector<std::string>& session = {});

 private:
  void save(Changed done);  // done(true) once written
  StateFile file_;
};

}  // namespace oppx::daemon
