// The fixture of the agent loop's tests (tests/chat/): a temp HOME with a repository as the
// current folder, the stdio connector agent_connector.js recording every call it gets, the
// scripted model server as OPPX_SERVER, and `oppx -p` as a user runs it.
#pragma once

#include "tests/support/harness.h"
#include "tests/support/scripted_model.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace oppx::test {

struct AgentFixture : ::testing::Test {
  TempHome home;
  InRepository repo{home};
  std::string calls = home.root() + "/calls.jsonl";
  std::optional<ScriptedModel> model;

  void SetUp() override {
    home.write_mcp_config(
        stdio_entry("agentc", "node", {std::string(OPPX_TEST_SUPPORT) + "/agent_connector.js", calls}));
  }
  void TearDown() override {
    oppx({"daemon", "stop"});
    ::unsetenv("OPPX_SERVER");
  }
  // The model server answers with `steps`, in order (model_steps.h).
  // With `settle`, once the daemon's connectors are up (connectors_settled, harness.h).
  void serve(const std::vector<std::string>& steps, int context = 32768, bool settle = true) {
    std::string list;
    for (const auto& s : steps) list += (list.empty() ? "" : ",") + s;
    model.emplace(home.root(), R"({"models": [{"id": "m1", "max_model_len": )" + std::to_string(context) +
                                   R"(}], "completions": [)" + list + "]}");
    ASSERT_TRUE(model->started()) << model->err();
    ::setenv("OPPX_SERVER", model->url().c_str(), 1);
    if (settle) connectors_settled(home, repo.root());
  }
  Result print(std::vector<std::string> args) {
    args.insert(args.begin(), "-p");
    return oppx(args, 90s);
  }
  boost::json::object print_json(std::vector<std::string> args, int expect_exit) {
    args.push_back("--json");
    Result r = print(args);
    EXPECT_EQ(r.exit_code, expect_exit) << r.out << r.err;
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(r.out, ec);
    EXPECT_FALSE(ec) << r.out << r.err;
    return ec || !v.is_object() ? boost::json::object{} : v.as_object();
  }
};

}  // namespace oppx::test
