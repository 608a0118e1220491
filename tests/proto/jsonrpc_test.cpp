// proto/jsonrpc and proto/daemon_api: what each malformed message turns into, and decoding that
// names the failing field.
#include "proto/daemon_api.h"
#include "proto/jsonrpc.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <cmath>

namespace oppx::proto {
namespace {

namespace json = boost::json;

Rejection rejection(std::string_view line) {
  auto r = parse_message(line);
  EXPECT_FALSE(r.has_value()) << line;
  return r.has_value() ? Rejection{} : r.error();
}

TEST(JsonRpc, ParsesRequestNotificationAndResponse) {
  auto req = parse_message(R"({"jsonrpc":"2.0","id":7,"method":"daemon/status","params":{},"extra":1})");
  ASSERT_TRUE(req);
  auto& r = std::get<Request>(*req);
  EXPECT_EQ(r.id, json::value(7));
  EXPECT_EQ(r.method, "daemon/status");

  auto note = parse_message(R"({"jsonrpc":"2.0","method":"notifications/x"})");
  ASSERT_TRUE(note);
  EXPECT_EQ(std::get<Notification>(*note).method, "notifications/x");

  auto ok = parse_message(R"({"jsonrpc":"2.0","id":"a","result":{"x":1}})");
  ASSERT_TRUE(ok);
  EXPECT_TRUE(std::get<Response>(*ok).ok);

  auto err = parse_message(
      R"({"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"m","data":{"kind":"method_not_found","methods":[]}}})");
  ASSERT_TRUE(err);
  auto& e = std::get<Response>(*err);
  EXPECT_FALSE(e.ok);
  EXPECT_EQ(e.error.code, -32601);
  EXPECT_EQ(e.error.kind, "method_not_found");
  EXPECT_TRUE(e.error.data.contains("methods"));
}

TEST(JsonRpc, RejectsWhatTheSpecForbids) {
  auto parse = rejection("{not json");
  EXPECT_EQ(parse.error.code, -32700);
  EXPECT_EQ(parse.error.kind, "parse_error");
  EXPECT_TRUE(parse.id.is_null());

  auto batch = rejection(R"([{"jsonrpc":"2.0","id":1,"method":"hello"}])");
  EXPECT_EQ(batch.error.code, -32600);
  EXPECT_EQ(batch.error.kind, "batch_unsupported");

  auto null_id = rejection(R"({"jsonrpc":"2.0","id":null,"method":"hello"})");
  EXPECT_EQ(null_id.error.code, -32600);
  EXPECT_NE(null_id.error.message.find("null"), std::string::npos);

  EXPECT_EQ(rejection(R"({"jsonrpc":"2.0","id":{"a":1},"method":"hello"})").error.code, -32600);
  EXPECT_EQ(rejection(R"({"jsonrpc":"2.0","id":1.5,"method":"hello"})").error.code, -32600);
  EXPECT_EQ(rejection(R"({"id":1,"method":"hello"})").error.code, -32600);
  EXPECT_EQ(rejection(R"({"jsonrpc":"1.0","id":1,"method":"hello"})").id, json::value(1));
  EXPECT_EQ(rejection(R"({"jsonrpc":"2.0","id":1,"method":5})").error.code, -32600);
  EXPECT_EQ(rejection(R"({"jsonrpc":"2.0","id":1,"method":"x","params":"s"})").error.code, -32602);
  EXPECT_EQ(rejection(R"({"jsonrpc":"2.0","id":1})").error.code, -32600);
  EXPECT_EQ(rejection(R"(42)").error.code, -32600);
  EXPECT_EQ(rejection("\xff\xfe\x01garbage").error.code, -32700);
}

TEST(JsonRpc, SerialisesOneLineWithKind) {
  std::string line =
      serialize_error(json::value(3), RpcError::make(ErrorCode::kInvalidParams, kind::kInvalidParams, "bad\nthing"));
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = parse_message(line);
  ASSERT_TRUE(back);
  auto& r = std::get<Response>(*back);
  EXPECT_EQ(r.error.kind, "invalid_params");
  EXPECT_EQ(r.error.message, "bad\nthing");
  EXPECT_EQ(id_key(json::value("7")), "s:7");
  EXPECT_EQ(id_key(json::value(7)), "i:7");
}

// Found while fixing what fuzz/terminal_escape found: a string holding bytes that are not UTF-8
// (a server's stderr line) made the whole line unreadable to every JSON parser.
TEST(JsonRpc, SerialisedLinesAreUtf8EvenWhenAStringIsNot) {
  const std::string bad = "boom \xff\xfe end \xe2\x9c";
  for (const std::string& line :
       {serialize_error(json::value(1), RpcError::make(ErrorCode::kInternal, kind::kInternal, bad)),
        serialize_result(json::value(2), json::value(bad)),
        serialize_request(json::value(3), "m", json::array{json::value(bad)}),
        serialize_notification("n", json::array{json::value(bad)})}) {
    auto back = parse_message(line);
    ASSERT_TRUE(back) << line;
    EXPECT_NE(line.find("boom \ufffd\ufffd end \ufffd\ufffd"), std::string::npos) << line;
  }
  EXPECT_EQ(serialize_result(json::value(4), json::value("é ✓ 😀")), R"({"jsonrpc":"2.0","id":4,"result":"é ✓ 😀"})");
}

// Found by fuzz/terminal_escape: Boost.JSON reads 1e999 as infinity and wrote it back as the bare
// word Infinity, so a server's huge number made the daemon's line unreadable to its client.
TEST(JsonRpc, ANumberTooLargeForADoubleIsWrittenAsNullNotAsInfinity) {
  json::value huge = json::parse(R"({"big":11111111111111111111E11111126,"small":-1e999,"keep":[1.5,"Infinity"]})");
  ASSERT_TRUE(std::isinf(huge.at("big").as_double()));
  EXPECT_EQ(json_text(huge), R"({"big":null,"small":null,"keep":[1.5,"Infinity"]})");
  for (const std::string& line : {serialize_result(json::value(1), huge), serialize_request(json::value(2), "m", huge),
                                  serialize_notification("n", huge)}) {
    auto back = parse_message(line);
    ASSERT_TRUE(back) << line;
  }
  EXPECT_EQ(json_text(json::value("NaN and Infinity")), R"("NaN and Infinity")");
}

// Boost.JSON writes 0.1 as 1E-1: valid, but not what the model wrote nor what a user reads.
TEST(JsonRpc, ANumberWithAFractionIsWrittenInItsShortestForm) {
  json::value v = json::parse(R"({"a":0.1,"b":[-2.5e-7,1e21,100.0,3],"c":{"d":0.30000000000000004},"s":"1E-1"})");
  std::string text = json_text(v);
  EXPECT_EQ(text, R"({"a":0.1,"b":[-2.5e-07,1e+21,100.0,3],"c":{"d":0.30000000000000004},"s":"1E-1"})");
  EXPECT_EQ(json_text(v.as_object()), text);
  EXPECT_EQ(json_text(v.at("b").as_array()), R"([-2.5e-07,1e+21,100.0,3])");
  EXPECT_TRUE(json::parse(text).at("b").at(2).is_double()) << "a whole double stays a double, not an integer";
  EXPECT_EQ(json::parse(text).at("c").at("d").as_double(), v.at("c").at("d").as_double()) << "reads back the same";
  EXPECT_EQ(serialize_result(json::value(1), v.at("a")), R"({"jsonrpc":"2.0","id":1,"result":0.1})");
}

TEST(DaemonApi, HelloParamsNameTheFailingField) {
  auto missing = decode<HelloParams>(json::parse(R"({"client":"x"})"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), "params.protocol: required");

  auto wrong = decode<HelloParams>(json::parse(R"({"protocol":"1"})"));
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error(), "params.protocol: expected integer");

  auto client = decode<HelloParams>(json::parse(R"({"protocol":1,"client":7})"));
  ASSERT_FALSE(client);
  EXPECT_EQ(client.error(), "params.client: expected string");

  auto extra = decode<HelloParams>(json::parse(R"({"protocol":1,"future_key":{"x":1}})"));
  ASSERT_TRUE(extra);
  EXPECT_EQ(extra->protocol, 1);

  auto array = decode<HelloParams>(json::parse(R"([1])"));
  ASSERT_FALSE(array);
  EXPECT_EQ(array.error(), "params: expected object");
}

TEST(DaemonApi, StatusRoundTrips) {
  StatusResult s;
  s.pid = 42;
  s.version = "0.1.0";
  s.uptime_ms = 1500;
  s.clients = 2;
  auto back = decode<StatusResult>(json::value_from(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->pid, 42);
  EXPECT_EQ(back->clients, 2);
  EXPECT_EQ(back->uptime_ms, 1500);
}

}  // namespace
}  // namespace oppx::proto
