// daemon/sse: the event-stream parser against the WHATWG rules, fed whole, split at every byte,
// and one byte at a time; line endings, comments, fields, ids, retry values, a BOM and the cap.
#include "common/sse.h"

#include <gtest/gtest.h>

namespace oppx::sse {
namespace {

using namespace std::chrono_literals;

std::vector<Event> parse_whole(std::string_view s, Parser& p) {
  std::vector<Event> out;
  EXPECT_TRUE(p.feed(s, out));
  return out;
}

std::vector<Event> parse(std::string_view s) {
  Parser p;
  return parse_whole(s, p);
}

std::vector<Event> parse_bytewise(std::string_view s) {
  Parser p;
  std::vector<Event> out;
  for (char c : s) EXPECT_TRUE(p.feed(std::string_view(&c, 1), out));
  return out;
}

// Every split of the stream into two chunks gives the same events as the whole.
void expect_split_invariant(std::string_view s) {
  auto whole = parse(s);
  for (std::size_t cut = 0; cut <= s.size(); ++cut) {
    Parser p;
    std::vector<Event> out;
    EXPECT_TRUE(p.feed(s.substr(0, cut), out));
    EXPECT_TRUE(p.feed(s.substr(cut), out));
    ASSERT_EQ(out.size(), whole.size()) << "split at " << cut;
    for (std::size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i].data, whole[i].data) << "split at " << cut;
      EXPECT_EQ(out[i].type, whole[i].type) << "split at " << cut;
      EXPECT_EQ(out[i].last_event_id, whole[i].last_event_id) << "split at " << cut;
    }
  }
}

TEST(Sse, OneEventWithTypeIdAndData) {
  auto ev = parse("event: message\nid: 7\ndata: {\"a\":1}\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, "message");
  EXPECT_EQ(ev[0].data, R"({"a":1})");
  EXPECT_EQ(ev[0].last_event_id, "7");
}

TEST(Sse, CrLfAndCrLineEndingsAreAllLineEndings) {
  for (std::string_view s : {"data: a\r\n\r\ndata: b\r\n\r\n", "data: a\r\rdata: b\r\r", "data: a\n\ndata: b\r\n\r"}) {
    auto ev = parse(s);
    ASSERT_EQ(ev.size(), 2u) << s;
    EXPECT_EQ(ev[0].data, "a");
    EXPECT_EQ(ev[1].data, "b");
    expect_split_invariant(s);
  }
}

TEST(Sse, ACrAtTheEndOfAChunkAndLfAtTheStartOfTheNextAreOneEnding) {
  Parser p;
  std::vector<Event> out;
  ASSERT_TRUE(p.feed("data: x\r", out));
  ASSERT_TRUE(p.feed("\ndata: y\r", out));
  ASSERT_TRUE(p.feed("\n\r", out));
  ASSERT_TRUE(p.feed("\n", out));
  ASSERT_EQ(out.size(), 1u) << "CR LF split across chunks must not count as two endings (an empty line)";
  EXPECT_EQ(out[0].data, "x\ny");
}

TEST(Sse, CommentsAreSkipped) {
  auto ev = parse(": ping\n:\ndata: a\n: in the middle\ndata: b\n\n: trailing\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "a\nb");
}

TEST(Sse, MultiLineDataIsJoinedWithLf) {
  auto ev = parse("data: one\ndata:two\ndata:  three\ndata\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "one\ntwo\n three\n") << "one space after the colon is dropped, not two; a bare field is empty";
}

TEST(Sse, EventsWithoutDataAreNotDispatchedButTheirIdCounts) {
  Parser p;
  auto ev = parse_whole("id: 5\n\nevent: x\n\n", p);
  EXPECT_TRUE(ev.empty());
  EXPECT_EQ(p.last_event_id(), "5");
  ev = parse_whole("data: after\n\n", p);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, "message") << "the event type does not carry over";
  EXPECT_EQ(ev[0].last_event_id, "5") << "the last event id persists";
}

TEST(Sse, AnIdHoldingNulIsIgnored) {
  using namespace std::string_literals;
  Parser p;
  auto ev = parse_whole("id: good\ndata: a\n\n"s + "id: b\0d\ndata: b\n\n"s, p);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].last_event_id, "good");
  EXPECT_EQ(p.last_event_id(), "good");
}

TEST(Sse, AnEmptyIdResetsTheLastEventId) {
  Parser p;
  parse_whole("id: 1\ndata: a\n\nid\ndata: b\n\n", p);
  EXPECT_EQ(p.last_event_id(), "");
}

TEST(Sse, RetryTakesDigitsOnly) {
  struct Case {
    std::string_view line;
    std::optional<std::uint64_t> want;
  };
  for (auto c :
       {Case{"retry: 2500\n", 2500}, Case{"retry: 0\n", 0}, Case{"retry: -5\n", std::nullopt},
        Case{"retry: 1e12\n", std::nullopt}, Case{"retry: junk\n", std::nullopt}, Case{"retry:\n", std::nullopt},
        Case{"retry: 12 \n", std::nullopt}, Case{"retry: 1000000000000\n", 1000000000000u}}) {
    Parser p;
    parse_whole(c.line, p);
    EXPECT_EQ(p.retry_ms(), c.want) << c.line;
  }
  Parser p;
  parse_whole("retry: 99999999999999999999999999999\n", p);
  ASSERT_TRUE(p.retry_ms());
  EXPECT_GT(*p.retry_ms(), 1000000000000u) << "saturates, never wraps to a small value";
  parse_whole("retry: junk\n", p);
  EXPECT_TRUE(p.retry_ms()) << "an invalid retry leaves the previous one";
}

TEST(Sse, RetryIsClampedByTheCaller) {
  EXPECT_EQ(clamp_retry(0, 1s), 100ms);
  EXPECT_EQ(clamp_retry(2500, 1s), 2500ms);
  EXPECT_EQ(clamp_retry(1000000000000u, 1s), 60s);
  EXPECT_EQ(clamp_retry(std::nullopt, 1s), 1s);
  EXPECT_EQ(clamp_retry(std::nullopt, 0ms), 100ms);
}

TEST(Sse, ALeadingBomIsStrippedEvenWhenSplit) {
  std::string_view s =
      "\xEF\xBB\xBF"
      "data: a\n\n";
  auto ev = parse_bytewise(s);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "a");
  expect_split_invariant(s);
  // Only at the start: a second BOM is content (here part of a field name, so ignored).
  auto two = parse(
      "\xEF\xBB\xBF\xEF\xBB\xBF"
      "data: a\n\n");
  EXPECT_TRUE(two.empty());
  // A partial BOM is content, not dropped.
  auto partial = parse(
      "\xEF"
      "data: a\n\ndata: b\n\n");
  ASSERT_EQ(partial.size(), 1u);
  EXPECT_EQ(partial[0].data, "b");
}

TEST(Sse, OtherFieldsAndFieldsWithoutColonAreIgnored) {
  auto ev = parse("foo: bar\ndata: x\nDATA: y\nevent\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "x");
  EXPECT_EQ(ev[0].type, "message");
}

TEST(Sse, AnIncompleteEventAtTheEndIsNotDispatched) {
  EXPECT_TRUE(parse("data: a\n").empty());
  EXPECT_TRUE(parse("data: a").empty());
}

TEST(Sse, OneByteAtATimeGivesTheSameEventsAsWhole) {
  std::string_view s =
      "\xEF\xBB\xBF: hello\r\nretry: 3000\r\nid: 1\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\n"
      "data: \"id\":1}\r\n\r\n:ping\n\nid: 2\rdata: second\r\rdata: third\n\n";
  auto whole = parse(s);
  auto bytes = parse_bytewise(s);
  ASSERT_EQ(whole.size(), 3u);
  ASSERT_EQ(bytes.size(), 3u);
  for (std::size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(bytes[i].data, whole[i].data);
    EXPECT_EQ(bytes[i].last_event_id, whole[i].last_event_id);
  }
  EXPECT_EQ(whole[0].data, "{\"jsonrpc\":\"2.0\",\n\"id\":1}");
  EXPECT_EQ(whole[1].last_event_id, "2");
  EXPECT_EQ(whole[2].data, "third");
  expect_split_invariant(s);
}

TEST(Sse, AnEventOverTheCapIsAnErrorNotUnboundedMemory) {
  Parser p(1024);
  std::vector<Event> out;
  std::string chunk(100, 'x');
  bool ok = p.feed("data: ", out);
  for (int i = 0; ok && i < 100; ++i) ok = p.feed(chunk, out);  // one line without an end
  EXPECT_FALSE(ok);
  EXPECT_TRUE(p.failed());
  EXPECT_FALSE(p.feed("\n\n", out)) << "stays failed";

  Parser q(1024);
  ok = true;
  for (int i = 0; ok && i < 100; ++i) ok = q.feed("data: " + chunk + "\n", out);  // many lines, no blank line
  EXPECT_FALSE(ok);
  EXPECT_TRUE(out.empty());

  Parser r(1024);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(r.feed("data: " + chunk + "\n\n", out)) << "small events never hit it";
  EXPECT_EQ(out.size(), 100u);
}

// The budget is shared: two parsers under the cap each, over the budget together; the one that
// would pass it fails (and says so), the other goes on, and what they held is given back.
TEST(SseParser, ParsersShareOneBudget) {
  MemoryBudget budget(64 * 1024);
  std::vector<Event> out;
  std::string chunk(1000, 'x');
  {
    Parser a(1 << 20, budget), b(1 << 20, budget);
    ASSERT_TRUE(a.feed("data: ", out));
    ASSERT_TRUE(b.feed("data: ", out));
    bool ok = true;
    for (int i = 0; ok && i < 40; ++i) ok = a.feed(chunk, out);
    ASSERT_TRUE(ok) << "40 kB fit";
    EXPECT_GT(budget.in_use(), 40'000u);
    for (int i = 0; ok && i < 40; ++i) ok = b.feed(chunk, out);
    EXPECT_FALSE(ok);
    EXPECT_TRUE(b.over_budget());
    EXPECT_LE(budget.in_use(), budget.limit());
    EXPECT_TRUE(a.feed("\n\n", out));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].data.size(), 40'000u);
  }
  EXPECT_EQ(budget.in_use(), 0u);
}

}  // namespace
}  // namespace oppx::sse
