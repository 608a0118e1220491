// Wire structs of session/open and the permissions/… methods (docs/protocol.md, "session/open"
// and "Permissions"), params and results, with the grammar of a rule: what a client may send is
// decided here, so the CLI can refuse a bad rule before it asks. Decoders in proto/decode.h's
// form, encoders as tag_invoke for boost::json::value_from.
#pragma once

#include "proto/decode.h"

#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oppx::proto {

// Rule forms: "<connector>.<tool>", "<connector>.*" (every tool of it), "run:<command prefix>".
// Returns why a rule is not one of them (for a usage error), or nothing.
std::optional<std::string> rule_problem(std::string_view rule);

struct SessionOpenParams {
  std::string cwd;            // the working folder, absolute (required)
  std::string mode = "chat";  // chat, print, plan or editor
};
// permissions/list.
struct PermissionsListParams {
  std::string cwd;
};
// permissions/allow, permissions/deny and permissions/remove.
struct RuleParams {
  std::string rule, cwd;
  bool session = false;  // this session's allows (session/open), never saved
};
// permissions/judge: a tool call (connector and tool) or a command.
struct JudgeParams {
  std::string connector, tool, command, cwd;
};

struct SessionOpenResult {
  std::string session;  // its id
  std::string cwd;
  std::string project;  // the repository root of cwd
  std::string mode;
  bool replaced = false;  // this connection had a session already
};
// permissions/list: the project's rules.
struct PermissionsListResult {
  std::string project;
  std::string file;  // where the daemon keeps them
  std::vector<std::string> allow, deny;
  std::optional<std::vector<std::string>> session_allow;  // when the connection has a session
  std::string problem;                                    // when the file was set aside; else ""
};
// permissions/allow, permissions/deny and permissions/remove: the rules after the change.
struct RuleResult : PermissionsListResult {
  std::string rule;
  bool changed = false;  // false when it was there already
  bool session = false;  // an allow for this session alone
};
// permissions/judge.
struct JudgeResult {
  std::string decision;  // allow, ask or deny
  std::string why;       // in words
  std::string project;
  std::string rule;               // the rule that decided; "" when none did
  std::optional<bool> read_only;  // for a tool, as its connector marks it
};

// permissions/ask, from the daemon to a session: one of its tools/call that the rules would ask
// about. Nothing reaches the connector unless the answer is yes, session or always.
inline constexpr std::string_view kPermissionsAsk = "permissions/ask";
struct PermissionQuestion {
  std::string connector, tool;
  boost::json::object arguments;
  std::string why;   // why it is asked, in words
  std::string rule;  // the rule that "always" saves ("<connector>.<tool>")
  bool read_only = false;
};
enum class PermissionAnswerKind { kNo, kYes, kSession, kAlways };
struct PermissionAnswer {
  PermissionAnswerKind answer = PermissionAnswerKind::kNo;
};
// tools/call's error kinds when the rules keep a call from its connector.
namespace kind {
inline constexpr std::string_view kDenied = "denied";      // a deny rule, or plan mode and a tool that writes
inline constexpr std::string_view kDeclined = "declined";  // the session answered no, or could not be asked
}  // namespace kind

Decoded<SessionOpenParams> decode(const boost::json::value& v, std::type_identity<SessionOpenParams>);
Decoded<PermissionsListParams> decode(const boost::json::value& v, std::type_identity<PermissionsListParams>);
Decoded<RuleParams> decode(const boost::json::value& v, std::type_identity<RuleParams>);
Decoded<JudgeParams> decode(const boost::json::value& v, std::type_identity<JudgeParams>);
Decoded<SessionOpenResult> decode(const boost::json::value& v, std::type_identity<SessionOpenResult>);
Decoded<PermissionsListResult> decode(const boost::json::value& v, std::type_identity<PermissionsListResult>);
Decoded<RuleResult> decode(const boost::json::value& v, std::type_identity<RuleResult>);
Decoded<JudgeResult> decode(const boost::json::value& v, std::type_identity<JudgeResult>);
Decoded<PermissionQuestion> decode(const boost::json::value& v, std::type_identity<PermissionQuestion>);
Decoded<PermissionAnswer> decode(const boost::json::value& v, std::type_identity<PermissionAnswer>);

void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const SessionOpenParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const PermissionsListParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const RuleParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const JudgeParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const SessionOpenResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const PermissionsListResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const RuleResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const JudgeResult& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const PermissionQuestion& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const PermissionAnswer& v);

// The method names, declared once for the router and the clients (permissions/ask, the daemon's
// request to a session, is above with its question).
inline constexpr std::string_view kSessionOpen = "session/open";
inline constexpr std::string_view kPermissionsList = "permissions/list";
inline constexpr std::string_view kPermissionsAllow = "permissions/allow";
inline constexpr std::string_view kPermissionsDeny = "permissions/deny";
inline constexpr std::string_view kPermissionsRemove = "permissions/remove";
inline constexpr std::string_view kPermissionsJudge = "permissions/judge";

}  // namespace oppx::proto
