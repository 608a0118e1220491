// chat/model_client: configuration, models, the context length and streamed completions against
// the scripted OpenAI-compatible server (tests/support/scripted_model_server.js), and the
// streaming reader of a reply's text.
#include "chat/model_client.h"
#include "tests/support/scripted_model.h"

#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>
#include <sstream>

namespace oppx::test {
namespace {

namespace json = boost::json;
using chat::ModelClient;
using chat::ModelConfig;

struct ModelServer : ::testing::Test {
  TempHome home;
  std::optional<ScriptedModel> server;
  std::string url;
  void serve(const std::string& script) {
    server.emplace(home.root(), script);
    ASSERT_TRUE(server->started()) << server->err();
    url = server->url();
  }
  ModelClient client(std::string model = "m1", std::string key_env = "", std::string key = "") {
    ModelConfig c;
    c.server = url;
    c.model = std::move(model);
    c.api_key_env = std::move(key_env);
    c.api_key = std::move(key);
    c.where = "OPPX_SERVER";
    return ModelClient(c);
  }
  std::vector<json::object> requests() const { return server->requests(); }
};

const char* kModels = R"("models": [{"id": "m1", "max_model_len": 8192}, {"id": "m2"}])";

TEST_F(ModelServer, ACompletionStreamsAsItIsWritten) {
  serve(std::string("{") + kModels +
        R"(, "completions": [{"deltas": ["{\"action\": \"reply\", ", "\"text\": \"Hel", "lo\"}"],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5}}]})");
  ModelClient m = client();
  std::vector<std::string> pieces;
  json::object body{{"messages", json::array{json::object{{"role", "user"}, {"content", "hi"}}}},
                    {"response_format", json::object{{"type", "json_schema"}}}};
  auto r = m.complete(body, [&](std::string_view p) { pieces.emplace_back(p); });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->content, R"({"action": "reply", "text": "Hello"})");
  EXPECT_EQ(pieces.size(), 3u);
  EXPECT_EQ(r->finish_reason, "stop");
  ASSERT_TRUE(r->usage);
  EXPECT_EQ(r->usage->at("completion_tokens"), 5);
  auto sent = json::parse(std::string(requests().back().at("body").as_string())).as_object();
  EXPECT_EQ(sent.at("stream"), true);
  EXPECT_EQ(sent.at("model"), "m1");
  EXPECT_TRUE(sent.contains("response_format"));
}

TEST_F(ModelServer, AnErrorInsideAStreamThatStartedWith200IsAnError) {
  serve(
      std::string("{") + kModels +
      R"(, "completions": [{"deltas": ["{\"act"], "error_event": {"message": "grammar rejected tokens", "code": 500}}]})");
  auto r = client().complete(json::object{}, nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "refused");
  EXPECT_NE(r.error().message.find("reported an error in its answer: \"grammar rejected tokens\""), std::string::npos)
      << r.error().message;
}

TEST_F(ModelServer, ARefusedSchemaIs400Or500WithTheServersWords) {
  serve(std::string("{") + kModels + R"(, "completions": [
        {"status": 400, "body": {"error": {"message": "Grammar error: Unknown format: uri"}}},
        {"status": 500, "body": {"error": "invalid JSON schema in format"}}]})");
  ModelClient m = client();
  auto bad = m.complete(json::object{}, nullptr);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, "refused");
  EXPECT_EQ(bad.error().http_status, 400u);
  EXPECT_NE(bad.error().message.find("HTTP 400 to POST /v1/chat/completions: \"Grammar error: Unknown format: uri\""),
            std::string::npos)
      << bad.error().message;
  auto worse = m.complete(json::object{}, nullptr);
  ASSERT_FALSE(worse);
  EXPECT_EQ(worse.error().http_status, 500u);
  EXPECT_NE(worse.error().message.find("invalid JSON schema in format"), std::string::npos) << worse.error().message;
}

TEST_F(ModelServer, ARefusedKeySaysWhichVariableHoldsIt) {
  serve(std::string("{") + kModels + R"(, "completions": [{"status": 401, "body": {"error": "bad key"}},
        {"status": 401, "body": {}}, {"status": 403, "body": {}}]})");
  auto wrong = client("m1", "MY_MODEL_KEY", "sk-wrong-1234").complete(json::object{}, nullptr);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().kind, "login");
  ASSERT_EQ(wrong.error().steps.size(), 1u);
  EXPECT_NE(wrong.error().steps[0].find("the key in ${MY_MODEL_KEY} was refused"), std::string::npos);
  EXPECT_EQ(std::string(requests().back().at("authorization").as_string()), "Bearer sk-wrong-1234");
  EXPECT_EQ(wrong.error().message.find("sk-wrong"), std::string::npos);
  auto unset = client("m1", "MY_MODEL_KEY", "").complete(json::object{}, nullptr);
  ASSERT_FALSE(unset);
  EXPECT_NE(unset.error().steps[0].find("${MY_MODEL_KEY} (named by api_key_env) is not set"), std::string::npos);
  auto none = client().complete(json::object{}, nullptr);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().http_status, 403u);
  EXPECT_NE(none.error().steps[0].find("\"api_key_env\""), std::string::npos) << none.error().steps[0];
}

TEST_F(ModelServer, AModelThatDoesNotExistListsTheOnesThatDo) {
  serve(std::string("{") + kModels +
        R"(, "completions": [{"status": 404, "body": {"error": {"message": "The model `nope` does not exist."}}}]})");
  ModelClient m = client("nope");
  auto r = m.resolve_model();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "no_model");
  EXPECT_NE(r.error().message.find("has no model named \"nope\"; it serves: m1, m2"), std::string::npos)
      << r.error().message;
  auto c = m.complete(json::object{}, nullptr);  // the server's own 404 says the same
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().kind, "no_model");
  EXPECT_NE(c.error().message.find("it serves: m1, m2"), std::string::npos) << c.error().message;
  ModelClient first = client("");
  auto picked = first.resolve_model();
  ASSERT_TRUE(picked) << picked.error().message;
  EXPECT_EQ(*picked, "m1");
  EXPECT_EQ(first.config().model, "m1");
}

TEST_F(ModelServer, NothingListeningIsUnreachableWithSteps) {
  int port;
  {
    serve("{}");
    port = std::stoi(url.substr(17));
    server.reset();
  }
  url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  auto r = client().complete(json::object{}, nullptr);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "unreachable");
  ASSERT_EQ(r.error().steps.size(), 2u);
  EXPECT_NE(r.error().steps[0].find("listens at http://127.0.0.1:" + std::to_string(port)), std::string::npos);
  EXPECT_NE(r.error().steps[1].find("(from OPPX_SERVER)"), std::string::npos);
}

TEST_F(ModelServer, AServerThatStopsAnsweringMidStreamTimesOut) {
  serve(std::string("{") + kModels +
        R"(, "completions": [{"deltas": ["{", "\"a"], "hang_after": 1}, {"hang": true}]})");
  ModelClient m = client();
  // Both limits also cover the first answer's start: 1 s leaves room for a loaded machine.
  m.timeouts.idle = std::chrono::milliseconds(1000);
  m.timeouts.headers = std::chrono::milliseconds(1000);
  std::string seen;
  auto r = m.complete(json::object{}, [&](std::string_view p) { seen += p; });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "timeout");
  EXPECT_EQ(seen, "{");
  EXPECT_NE(r.error().message.find("sent nothing for 1 s in the middle of an answer"), std::string::npos)
      << r.error().message;
  auto first_byte = m.complete(json::object{}, nullptr);
  ASSERT_FALSE(first_byte);
  EXPECT_EQ(first_byte.error().kind, "timeout");
  EXPECT_NE(first_byte.error().message.find("took over 1 s to send the headers"), std::string::npos)
      << first_byte.error().message;
}

TEST_F(ModelServer, JsonInReasoningContentIsReadWhenContentIsEmpty) {
  serve(std::string("{") + kModels +
        R"(, "completions": [{"deltas": ["{\"action\":", "\"reply\"}"], "reasoning": true}]})");
  auto r = client().complete(json::object{}, nullptr);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->content, R"({"action":"reply"})");
}

TEST_F(ModelServer, TheContextLengthFromInfoModelsOrProps) {
  serve(std::string("{") + kModels + "}");
  auto from_models = client().context_length();
  ASSERT_TRUE(from_models.tokens) << from_models.note;
  EXPECT_EQ(*from_models.tokens, 8192);
  EXPECT_EQ(from_models.source, "/v1/models");
  // llama.cpp: /v1/models names the training length; the one it runs with is in /props.
  serve(R"({"models": [{"id": "q", "meta": {"n_ctx_train": 131072}}],
            "props": {"default_generation_settings": {"n_ctx": 4096}}})");
  auto from_props = client().context_length();
  ASSERT_TRUE(from_props.tokens) << from_props.note;
  EXPECT_EQ(*from_props.tokens, 4096);
  EXPECT_EQ(from_props.source, "/props");
  serve(R"({"models": [{"id": "x"}]})");
  auto unknown = client().context_length();
  EXPECT_FALSE(unknown.tokens);
  EXPECT_FALSE(unknown.note.empty());
}

TEST(ModelConfig, TheEnvironmentOverConfigJsonAndTheKeyFromItsVariable) {
  TempHome home;
  ::mkdir((home.root() + "/config").c_str(), 0700);
  ::mkdir((home.root() + "/config/oppx").c_str(), 0700);
  std::ofstream(home.root() + "/config/oppx/config.json")
      << R"({"server": "http://file:8000/v1", "model": "file-model", "api_key_env": "MY_KEY", "other": 1})";
  auto c = chat::load_model_config({{"MY_KEY", "sk-123"}});
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "http://file:8000/v1");
  EXPECT_EQ(c->model, "file-model");
  EXPECT_EQ(c->api_key, "sk-123");
  auto e = chat::load_model_config({{"OPPX_SERVER", "https://env/v1"}, {"OPPX_MODEL", "env-model"}});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->server, "https://env/v1");
  EXPECT_EQ(e->model, "env-model");
  EXPECT_EQ(e->where, "OPPX_SERVER");
  EXPECT_TRUE(e->api_key.empty());
  std::ofstream(home.root() + "/config/oppx/config.json") << R"({})";
  auto none = chat::load_model_config({});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, "config");
  EXPECT_NE(none.error().steps[0].find("OPPX_SERVER"), std::string::npos);
  auto bad = chat::load_model_config({{"OPPX_SERVER", "gpu-box:8000"}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("cannot be used"), std::string::npos) << bad.error().message;
}

// The visible text of a reply, decoded while the JSON streams in, split anywhere.
TEST(StreamingField, DecodesTheFieldAsItArrivesSplitAnywhere) {
  std::string text =
      R"({"action": "reply", "facts": {"a": "}\"{", "b": [1, {"c": "\""}]}, "n": 3, "text": "Line 1\nsays \"hi\" \u00e9\ud83d\ude00 \\ end", "after": "x"})";
  std::string expect = "Line 1\nsays \"hi\" \xC3\xA9\xF0\x9F\x98\x80 \\ end";
  for (std::size_t step : {1u, 2u, 3u, 7u, 1000u}) {
    chat::StreamingField f("text");
    std::string got;
    for (std::size_t i = 0; i < text.size(); i += step) got += f.feed(std::string_view(text).substr(i, step));
    EXPECT_EQ(got, expect) << "pieces of " << step;
    EXPECT_TRUE(f.done());
  }
  chat::StreamingField missing("text");
  EXPECT_EQ(missing.feed(R"({"action": "read", "path": "text"})"), "");
  EXPECT_TRUE(missing.done());
}

}  // namespace
}  // namespace oppx::test
