// daemon/mcp_config: the mcpServers format, errors with file:line:col and the key path,
// ${VAR} expansion that names variables and never values, masking for display.
#include "daemon/mcp_config.h"

#include <gtest/gtest.h>

namespace oppx::daemon {
namespace {

TEST(McpConfig, ReadsStdioAndHttpEntries) {
  auto cfg = parse_mcp_config(R"({"other":1,"mcpServers":{
    "fs":{"command":"npx","args":["-y","server"],"env":{"K":"v"}},
    "linear":{"type":"http","url":"https://mcp.example/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}},
    "alias":{"type":"streamable-http","url":"https://x.example/mcp"}}})",
                              "mcp.json");
  ASSERT_TRUE(cfg) << cfg.error();
  ASSERT_EQ(cfg->connectors.size(), 3u);
  EXPECT_EQ(cfg->connectors[0].command, "npx");
  EXPECT_EQ(cfg->connectors[0].args, (std::vector<std::string>{"-y", "server"}));
  EXPECT_EQ(cfg->connectors[0].env, (Pairs{{"K", "v"}}));
  EXPECT_EQ(cfg->connectors[1].kind, ConnectorDef::Kind::kHttp);
  EXPECT_EQ(cfg->connectors[1].headers, (Pairs{{"Authorization", "Bearer ${TOKEN}"}}));
  EXPECT_EQ(cfg->connectors[2].kind, ConnectorDef::Kind::kHttp);
  // Identity is the entry as written: another key order is another definition.
  auto swapped =
      parse_mcp_config(R"({"mcpServers":{"fs":{"args":["-y","server"],"command":"npx","env":{"K":"v"}}}})", "m");
  ASSERT_TRUE(swapped);
  EXPECT_NE(swapped->connectors[0].canonical, cfg->connectors[0].canonical);
}

// "alwaysLoad" pins tools for the agent's tool search: true is every tool, a list names them.
TEST(McpConfig, AlwaysLoadIsTrueFalseOrToolNames) {
  auto cfg = parse_mcp_config(R"({"mcpServers":{"all":{"command":"x","alwaysLoad":true},
    "some":{"command":"x","alwaysLoad":["read_graph","search_nodes"]},"none":{"command":"x","alwaysLoad":false}}})",
                              "m.json");
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->connectors.at(0).always_load, std::vector<std::string>{"*"});
  EXPECT_EQ(cfg->connectors.at(1).always_load, (std::vector<std::string>{"read_graph", "search_nodes"}));
  EXPECT_TRUE(cfg->connectors.at(2).always_load.empty());
  auto bad = parse_mcp_config(R"({"mcpServers":{"a":{"command":"x","alwaysLoad":"yes"}}})", "m.json");
  ASSERT_TRUE(bad);
  EXPECT_NE(bad->connectors.at(0).unsupported.find("mcpServers.a.alwaysLoad: expected true, false or an array"),
            std::string::npos)
      << bad->connectors.at(0).unsupported;
}

TEST(McpConfig, ResultLimitIsANumberOfCharactersFromAThousand) {
  auto cfg = parse_mcp_config(R"({"mcpServers":{"a":{"command":"x","resultLimit":50000},
    "b":{"command":"x","resultLimit":10},"c":{"command":"x","resultLimit":"big"}}})",
                              "m.json");
  ASSERT_TRUE(cfg);
  EXPECT_EQ(cfg->connectors.at(0).result_limit, 50000u);
  EXPECT_NE(
      cfg->connectors.at(1).unsupported.find("mcpServers.b.resultLimit: expected a number of characters from 1000"),
      std::string::npos);
  EXPECT_NE(cfg->connectors.at(2).unsupported.find("resultLimit"), std::string::npos);
}

TEST(McpConfig, ErrorsSayWhere) {
  auto truncated = parse_mcp_config("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"", "/h/mcp.json");
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.error().rfind("/h/mcp.json:3:", 0), 0u) << truncated.error();

  auto bad = parse_mcp_config("{\n  \"mcpServers\": {\n    \"a\": {\"command\": x}}}", "m.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().rfind("m.json:3:", 0), 0u) << bad.error();

  auto bom = parse_mcp_config("\xEF\xBB\xBF{}", "m.json");
  ASSERT_FALSE(bom);
  EXPECT_NE(bom.error().find("m.json:1:1: the file starts with a byte-order mark"), std::string::npos);

  // A wrong entry is set aside (daemon/pasted_config_test.cpp), with where it is.
  auto args = parse_mcp_config(R"({"mcpServers":{"a":{"command":"x","args":"-y"}}})", "m.json");
  ASSERT_TRUE(args);
  EXPECT_EQ(args->connectors.at(0).unsupported, "m.json:1:42: mcpServers.a.args: expected an array of strings");

  // A wrong type is placed too, after other entries, nested values and escaped strings.
  auto env = parse_mcp_config(
      "{\n  \"x\": [1, {\"k\": \"}\\\"\"}],\n  \"mcpServers\": {\n    \"ok\": {\"command\": \"a\", \"args\": []},\n"
      "    \"a\": {\"command\": \"x\",\n      \"env\": {\"J\": \"j\", \"K\": 1}}}}",
      "m.json");
  ASSERT_TRUE(env);
  EXPECT_EQ(env->connectors.at(1).unsupported, "m.json:6:30: mcpServers.a.env.K: expected a string");

  auto sse = parse_mcp_config(R"({"mcpServers":{"a":{"type":"sse","url":"https://x"}}})", "m.json");
  ASSERT_TRUE(sse);
  EXPECT_NE(sse->connectors.at(0).unsupported.find("older SSE transport is not supported"), std::string::npos);

  auto name = parse_mcp_config(R"({"mcpServers":{"a b":{"command":"x"}}})", "m.json");
  ASSERT_TRUE(name);
  const std::string& why = name->connectors.at(0).unsupported;
  EXPECT_NE(why.find("letters, digits"), std::string::npos);
  EXPECT_EQ(why.rfind("m.json:1:22: ", 0), 0u) << why;

  EXPECT_FALSE(parse_mcp_config(std::string(kMaxConfigBytes + 1, ' '), "m.json"));
  EXPECT_TRUE(parse_mcp_config("{}", "m.json"));
}

TEST(McpConfig, ExpandsVariablesAndNamesTheMissingOne) {
  EnvMap env{{"TOKEN", "s3cret"}, {"EMPTY", ""}, {"BAD", "a\nb"}};
  EXPECT_EQ(*expand("Bearer ${TOKEN}", env), "Bearer s3cret");
  EXPECT_EQ(*expand("${NOPE:-fallback}/x", env), "fallback/x");
  EXPECT_EQ(*expand("${EMPTY:-used}", env), "used");
  EXPECT_EQ(*expand("no refs $HOME", env), "no refs $HOME");
  auto missing = expand("Bearer ${NOPE}", env);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().variable, "NOPE");
  auto bad = expand("${BAD}", env);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().variable, "BAD");
  EXPECT_EQ(bad.error().problem, ExpandError::Problem::kLineBreak);
  EXPECT_EQ(bad.error().describe().find("a\nb"), std::string::npos) << "never the value";
  EXPECT_EQ(missing.error().describe(),
            "it needs ${NOPE}, which is not set in the environment of the oppx command that started it");
  auto unclosed = expand("${UNCLOSED", env);
  ASSERT_FALSE(unclosed);
  EXPECT_EQ(unclosed.error().describe(), "its definition has a \"${\" without a closing \"}\"");
}

TEST(McpConfig, ExpandsReferencesInDefaultsAsTheShellDoes) {
  EnvMap env{{"TOKEN", "s3cret"}, {"EMPTY", ""}};
  auto text = [&env](std::string_view s) {
    auto r = expand(s, env);
    return r ? *r : "error: " + r.error().describe();
  };
  EXPECT_EQ(text("${NOPE:-${TOKEN}}"), "s3cret");
  EXPECT_EQ(text("${NOPE:-a-${EMPTY:-b}-c}/d"), "a-b-c/d");
  EXPECT_EQ(text("${TOKEN:-${NOPE}}"), "s3cret") << "a default not used is not read";
  EXPECT_EQ(text("${NOPE:-{x}}"), "{x}") << "only \"${\" opens: the first \"}\" closes";
  EXPECT_EQ(text("$${EMPTY}{TOKEN}"), "${TOKEN}") << "one pass: what expansion makes is not read again";
  auto inner = expand("${NOPE:-${NOPE2}}", env);
  ASSERT_FALSE(inner);
  EXPECT_EQ(inner.error().variable, "NOPE2");
  auto unclosed = expand("${NOPE:-${TOKEN}", env);
  ASSERT_FALSE(unclosed);
  EXPECT_EQ(unclosed.error().problem, ExpandError::Problem::kUnclosed);

  auto nested = [](int depth) {
    std::string s;
    for (int i = 0; i < depth; ++i) s += "${NOPE:-";
    return s + "end" + std::string(depth, '}');
  };
  EXPECT_EQ(text(nested(kMaxDefaultNesting + 1)), "end");
  auto deep = expand(nested(kMaxDefaultNesting + 2), env);
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().problem, ExpandError::Problem::kTooDeep);
  EXPECT_EQ(deep.error().describe(), "its definition nests ${NAME:-default} defaults more than 8 deep");
  auto very_deep = expand(nested(100'000), env);
  ASSERT_FALSE(very_deep) << "no recursion past the limit";
  EXPECT_EQ(very_deep.error().problem, ExpandError::Problem::kTooDeep);
  ConnectorDef def;
  def.command = nested(100'000);
  EXPECT_EQ(referenced_variables(def), std::vector<std::string>{"NOPE"});
}

TEST(McpConfig, NamesTheVariablesADefinitionReads) {
  auto cfg = parse_mcp_config(R"({"mcpServers":{
    "s":{"command":"${BIN:-npx}","args":["--dir","${HOME}/x","${HOME}"],"env":{"T":"${TOKEN}","L":"plain"}},
    "h":{"type":"http","url":"https://${HOST}/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}}}})",
                              "m");
  ASSERT_TRUE(cfg) << cfg.error();
  EXPECT_EQ(referenced_variables(cfg->connectors[0]), (std::vector<std::string>{"BIN", "HOME", "TOKEN"}));
  EXPECT_EQ(referenced_variables(cfg->connectors[1]), (std::vector<std::string>{"HOST", "TOKEN"}));

  ConnectorDef def;
  def.command = "${BIN:-${HOME}/bin/${TOOL:-x}}";
  def.headers = {{"Authorization", "Bearer ${TOKEN:-${FALLBACK_TOKEN}}"}};
  EXPECT_EQ(referenced_variables(def), (std::vector<std::string>{"BIN", "HOME", "TOOL", "TOKEN", "FALLBACK_TOKEN"}))
      << "a default's references are read too: their values are masked in the log like the rest";
  EXPECT_EQ(mask_value("Bearer ${TOKEN:-${FALLBACK_TOKEN}}"), "Bearer ${TOKEN:-***}");

  // Not a variable's name: never read, listed or quoted, since it may hold a secret.
  def = ConnectorDef{};
  def.headers = {{"Authorization", "Bearer ${X${Y}sk-live-abc} ${TOKEN}"}};
  EXPECT_EQ(referenced_variables(def), std::vector<std::string>{"TOKEN"});
  auto not_a_name = expand(def.headers[0].second, EnvMap{{"TOKEN", "t"}});
  ASSERT_FALSE(not_a_name);
  EXPECT_EQ(not_a_name.error().problem, ExpandError::Problem::kNotAName);
  EXPECT_TRUE(not_a_name.error().written_wrong());
  EXPECT_EQ(not_a_name.error().describe().find("sk-live"), std::string::npos) << not_a_name.error().describe();
}

TEST(McpConfig, MasksSecretsButNotReferences) {
  EXPECT_EQ(mask_value("Bearer lin_api_1234567890"), "Bearer lin_…***");
  EXPECT_EQ(mask_value("Bearer ${LINEAR_API_KEY}"), "Bearer ${LINEAR_API_KEY}");
  EXPECT_EQ(mask_value("short"), "***");
  EXPECT_EQ(mask_value("abcdefghijklmnop").find("mnop"), std::string::npos);
  // Literal text beside a reference is a secret like any other.
  EXPECT_EQ(mask_value("Bearer sk-live-XYZ123 ${X}"), "Bearer ***${X}");
  EXPECT_EQ(mask_value("sk-live-XYZ123${X}"), "***${X}");
  EXPECT_EQ(mask_value("${USER}:${PASS}"), "${USER}:${PASS}");
  EXPECT_EQ(mask_value("${A}hunter2"), "${A}***");
  // A default is literal text too: the reference shows, the default does not.
  EXPECT_EQ(mask_value("${TOKEN:-defaultsecretvalue}"), "${TOKEN:-***}");
  EXPECT_EQ(mask_value("Bearer ${TOKEN:-hunter2}"), "Bearer ${TOKEN:-***}");
  EXPECT_EQ(mask_value("${TOKEN:-}"), "${TOKEN:-}");
  EXPECT_EQ(mask_value("Bearer ${X${Y}sk-live-abc}"), "Bearer ${***}") << "not a name: never read, maybe a secret";
}

TEST(McpConfig, MasksPasswordsAndQueryValuesInUrls) {
  EXPECT_EQ(mask_url("https://example.test/mcp"), "https://example.test/mcp");
  EXPECT_EQ(mask_url("https://example.test/mcp?api_key=sk-live-XYZ123456&v=2#top"),
            "https://example.test/mcp?api_key=sk-l…***&v=***#top");
  EXPECT_EQ(mask_url("https://me:hunter2@example.test/mcp"), "https://me:***@example.test/mcp");
  EXPECT_EQ(mask_url("https://example.test/mcp?key=${KEY}"), "https://example.test/mcp?key=${KEY}");
}

TEST(McpConfig, MasksTheValuesOfSecretFlagsInArguments) {
  std::vector<std::string> args{"-y",
                                "mcp-remote",
                                "https://example.test/sse?token=abcdefghijklmnop",
                                "--header",
                                "Authorization: Bearer abcdefghijklmnop",
                                "--api-key",
                                "sk-live-XYZ123456",
                                "--password=hunter2",
                                "--dir",
                                "/tmp/x",
                                "--token",
                                "${TOKEN}"};
  auto m = mask_args(args);
  ASSERT_EQ(m.size(), args.size());
  EXPECT_EQ(m[0], "-y");
  EXPECT_EQ(m[1], "mcp-remote");
  EXPECT_EQ(m[2], "https://example.test/sse?token=abcd…***");
  EXPECT_EQ(m[4], "Authorization: Bearer abcd…***");
  EXPECT_EQ(m[6], "sk-l…***");
  EXPECT_EQ(m[7], "--password=***");
  EXPECT_EQ(m[9], "/tmp/x");
  EXPECT_EQ(m[11], "${TOKEN}");
  for (auto& a : m) EXPECT_EQ(a.find("hunter2"), std::string::npos) << a;
}

TEST(McpConfig, TheUserFileFollowsTheClientsEnvironment) {
  EXPECT_EQ(user_mcp_config_path({{"OPPX_MCP_CONFIG", "/x/m.json"}, {"XDG_CONFIG_HOME", "/c"}}), "/x/m.json");
  EXPECT_EQ(user_mcp_config_path({{"XDG_CONFIG_HOME", "/c"}}), "/c/oppx/mcp.json");
  EXPECT_EQ(user_mcp_config_path({{"HOME", "/h"}}), "/h/.config/oppx/mcp.json");
}

}  // namespace
}  // namespace oppx::daemon
