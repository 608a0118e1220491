// Wire structs of session/open and the permissions/… methods (docs/protocol.md, "session/open"
// and "Permissions"), with the grammar of a rule: what a client may send is decided here, so the
// CLI can refuse a bad rule before it asks. Decoders in proto/decode.h's form, encoders as
// tag_invoke for boost::json::value_from.
#pragma once

#include "proto/decode.h"

#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>

#include <optional>
#include <string>
#include <string_view>

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

Decoded<SessionOpenParams> decode(const boost::json::value& v, std::type_identity<SessionOpenParams>);
Decoded<PermissionsListParams> decode(const boost::json::value& v, std::type_identity<PermissionsListParams>);
Decoded<RuleParams> decode(const boost::json::value& v, std::type_identity<RuleParams>);
Decoded<JudgeParams> decode(const boost::json::value& v, std::type_identity<JudgeParams>);

void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const SessionOpenParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const PermissionsListParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const RuleParams& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& jv, const JudgeParams& v);

}  // namespace oppx::proto
