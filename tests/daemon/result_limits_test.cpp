// Results that do not flood the model's context, on server-everything (the reference server): a
// long result cut at the entry's "resultLimit" with a marker naming the file that keeps the whole
// (0600, in a 0700 folder of the cache); an image described, never inlined; structuredContent
// given as compact JSON once it fits the tool's outputSchema.
#include "tests/support/harness.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>

namespace oppx::test {
namespace {

namespace json = boost::json;

struct ResultLimits : ::testing::Test {
  TempHome home;
  std::optional<SyncClient> client;

  void SetUp() override {
    ASSERT_EQ(::access(kEverything.c_str(), R_OK), 0) << kEverything << " is missing: run packaging/bootstrap.sh";
    home.write_mcp_config(R"("everything":{"command":"node","args":[")" + kEverything +
                          R"(","stdio"],"resultLimit":1000})");
    client = hello_client(home);
    ASSERT_TRUE(client);
  }
  void TearDown() override { oppx({"daemon", "stop"}); }
  json::object call(const std::string& tool, json::object args) {
    auto r =
        client->call("tools/call", json::object{{"connector", "everything"}, {"tool", tool}, {"arguments", args}}, 30s);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->as_object() : json::object{};
  }
};

TEST_F(ResultLimits, ALongResultIsCutAtTheEntrysLimitAndTheWholeIsKeptInAPrivateFile) {
  std::string message(3000, 'x');
  message += "THE END";
  json::object r = call("echo", {{"message", message}});
  EXPECT_EQ(r.at("truncated"), true);
  std::string text(r.at("text").as_string());
  std::string file(r.at("text_file").as_string());
  EXPECT_EQ(text.substr(0, 1001), "Echo: " + std::string(994, 'x') + "\n");
  EXPECT_NE(text.find("[… cut at 1000 of 3013 characters; the whole result is in " + file +
                      " (read it with \"offset\": 1000 for what follows) …]"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("THE END"), std::string::npos);
  EXPECT_EQ(file.rfind(home.root() + "/cache/oppx/results/everything.echo-", 0), 0u) << file;
  EXPECT_EQ(read_file(file), "Echo: " + message);
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((home.root() + "/cache/oppx/results").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  // Under the limit: nothing cut, no file.
  json::object small = call("echo", {{"message", "short"}});
  EXPECT_EQ(small.at("text"), "Echo: short");
  EXPECT_EQ(small.at("truncated"), false);
  EXPECT_FALSE(small.contains("text_file"));
}

TEST_F(ResultLimits, AnImageIsDescribedAndStructuredContentIsCompactJson) {
  json::object image = call("get-tiny-image", {});
  std::string text(image.at("text").as_string());
  EXPECT_NE(text.find("[image: image/png, "), std::string::npos) << text;
  EXPECT_NE(text.find(", not shown]"), std::string::npos) << text;
  EXPECT_LT(text.size(), 600u) << text;  // no base64 inlined

  json::object weather = call("get-structured-content", {{"location", "Chicago"}});
  std::string structured(weather.at("structured").as_string());
  json::value parsed = json::parse(structured);
  EXPECT_TRUE(parsed.at("temperature").is_number()) << structured;
  EXPECT_TRUE(parsed.at("conditions").is_string()) << structured;
  EXPECT_EQ(structured.find("\": "), std::string::npos) << structured;  // compact
  EXPECT_FALSE(weather.contains("structured_problem"));
}

}  // namespace
}  // namespace oppx::test
