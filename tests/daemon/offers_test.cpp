// Resources and prompts, on server-everything (the reference server): listed, read and fetched
// with `oppx mcp resources/read/prompts/prompt`, and in an agent's turn (`oppx -p`) a message's
// `@everything:<uri>` attached and `/everything:<prompt>` sent in its place.
#include "tests/support/agent_fixture.h"
#include "tests/support/harness.h"
#include "tests/support/model_steps.h"
#include "tests/support/waits.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

const std::string kDoc = "demo://resource/static/document/architecture.md";

struct Offers : AgentFixture {
  void SetUp() override {
    ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
    home.write_mcp_config(
        stdio_entry("everything", "node", {kEverything, "stdio"}) + "," +
        stdio_entry("agentc", "node", {std::string(OPPX_TEST_SUPPORT) + "/agent_connector.js", calls}));
  }
  std::string last_user_message() {
    auto bodies = model->completions();
    if (bodies.empty()) return {};
    return std::string(bodies.back().at("messages").as_array().back().at("content").as_string());
  }
};

TEST_F(Offers, TheCliListsAndReadsResourcesAndFetchesPrompts) {
  Result list = oppx({"mcp", "resources", "everything"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("@everything:" + kDoc + "  architecture.md (text/markdown)\n"), std::string::npos)
      << list.out;
  EXPECT_NE(list.out.find("(template)\n"), std::string::npos) << list.out;
  Result as_json = oppx({"mcp", "resources", "everything", "--json"});
  ASSERT_EQ(as_json.exit_code, 0);
  EXPECT_GE(json::parse(as_json.out).at("resources").as_array().size(), 6u);

  Result read = oppx({"mcp", "read", "everything", kDoc});
  ASSERT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(read.out.rfind("# Everything Server", 0), 0u) << read.out.substr(0, 200);

  Result prompts = oppx({"mcp", "prompts", "everything"});
  ASSERT_EQ(prompts.exit_code, 0) << prompts.err;
  EXPECT_NE(prompts.out.find("/everything:args-prompt city=… [state=…]  "), std::string::npos) << prompts.out;
  Result prompt = oppx({"mcp", "prompt", "everything", "args-prompt", "city=Paris"});
  ASSERT_EQ(prompt.exit_code, 0) << prompt.err;
  EXPECT_EQ(prompt.out, "[user]\nWhat's weather in Paris?\n");

  // A prompt it lacks: the server's error, exit 1; a server without prompts offers none.
  Result missing = oppx({"mcp", "prompt", "everything", "no-such-prompt"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_FALSE(missing.err.empty());
  Result none = oppx({"mcp", "prompts", "agentc"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.err.find("agentc offers no prompts"), std::string::npos) << none.err;
  Result usage = oppx({"mcp", "prompt", "everything", "args-prompt", "Paris"});
  EXPECT_EQ(usage.exit_code, 2);
}

TEST_F(Offers, AMessageAttachesAResourceAndAPromptIsSentInItsPlace) {
  serve({reply("Read it."), reply("Sunny."), reply("never")});
  Result attached = print({"summarize @everything:" + kDoc + ", please"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_NE(attached.err.find("Attached @everything:" + kDoc), std::string::npos) << attached.err;
  std::string sent = last_user_message();
  EXPECT_EQ(sent.rfind("summarize @everything:" + kDoc + ", please\n\nThe resource @everything:" + kDoc, 0), 0u)
      << sent.substr(0, 300);
  EXPECT_NE(sent.find("untrusted reference text"), std::string::npos);
  EXPECT_NE(sent.find("# Everything Server"), std::string::npos);

  Result prompted = print({"/everything:args-prompt city=Paris"});
  ASSERT_EQ(prompted.exit_code, 0) << prompted.err;
  EXPECT_EQ(prompted.out, "Sunny.\n");
  EXPECT_EQ(last_user_message(), "What's weather in Paris?");

  // A prompt that cannot be fetched ends the turn before the model is asked, saying why.
  Result failed = print({"/everything:no-such-prompt"});
  EXPECT_NE(failed.out.find("The prompt everything:no-such-prompt could not be fetched"), std::string::npos)
      << failed.out;
  EXPECT_EQ(model->completions().size(), 2u);
  // Not a connector's name: the text stays as it is.
  serve({reply("Plain.")});
  ASSERT_EQ(print({"mail me@example.com:25 and /etc/x:y"}).exit_code, 0);
  EXPECT_EQ(last_user_message(), "mail me@example.com:25 and /etc/x:y");
}

}  // namespace
}  // namespace oppx::test

namespace oppx::test {
namespace {

// A list is kept after its first reading, and read again once the server says it changed: a real
// 2026-07-28 server (modern_server.mjs) adds a resource with `grow` and announces it on the
// subscriptions/listen stream.
TEST(OffersKept, AResourcesListIsReadAgainOnceTheServerSaysItChanged) {
  TempHome home;
  const std::string modern = std::string(OPPX_TEST_SUPPORT) + "/modern_server.mjs";
  home.write_mcp_config(stdio_entry("modern", "node", {modern, "stdio"},
                                    {{"OPPX_MODERN_SDK", std::string(OPPX_NPM_DIR) + "/node_modules"}}));
  connectors_settled(home, "");
  Result first = oppx({"mcp", "resources", "modern"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("@modern:note://base"), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("note://grown"), std::string::npos) << first.out;
  ASSERT_EQ(oppx({"mcp", "call", "modern", "grow"}).exit_code, 0);
  std::string seen;
  EXPECT_TRUE(when_connectors_change(home.socket(), [&] {
    seen = oppx({"mcp", "resources", "modern"}).out;
    return seen.find("@modern:note://grown") != std::string::npos;
  })) << seen;
  Result read = oppx({"mcp", "read", "modern", "note://grown"});
  EXPECT_EQ(read.out, "the grown note\n") << read.err;
  oppx({"daemon", "stop"});
}

}  // namespace
}  // namespace oppx::test
