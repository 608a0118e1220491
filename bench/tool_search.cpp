// bench/tool_search: what tool search saves and how often it finds the tool a request needs.
//  1. The hit rate: over the tool lists of fourteen real servers (tests/data/tool_lists), the
//     share of requests whose needed tool is among the six a search returns, on the set written
//     while the search was tuned and on one written apart from it; the query alone beside it.
//  2. Tokens per request with 20 connectors (the fourteen lists, and a second account of the six
//     largest) through oppxd and `oppx -p`: the first request with every tool listed
//     ("tool_search": "never", today's prompt), the first with search ("always"), and the one
//     after a search; beside them the same request with no connector, so the tools' own share is
//     read off. Counted as the agent counts (4 characters a token) on the bodies the model server
//     received.
//  3. tools/search through the daemon: round-trip time over the 20 connectors' 320 tools, beside
//     mcp/list on the same connection.
// Prints figures; exits 1 only when something could not be measured.
//   usage: tool_search [--searches N]
#include "bench/bench_support.h"
#include "bench/model_server.h"
#include "common/tool_text.h"
#include "daemon/tool_search.h"
#include "proto/mcp_api.h"
#include "proto/tool_search_api.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace json = boost::json;
using oppx::bench::Clock;
using oppx::bench::ModelServer;

const std::string kLists = std::string(OPPX_TEST_DATA) + "/tool_lists";
// The six largest lists again, as a second account or cluster would be: 20 connectors in all.
const std::vector<std::string> kSecond{"github", "playwright-mcp", "notion", "kubernetes", "sentry", "filesystem"};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> list_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(kLists)) {
    std::string name = e.path().filename().string();
    if (name != "requests.json" && name != "heldout.json") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Rate {
  int found = 0, alone = 0, total = 0;
};

Rate hit_rate(const oppx::daemon::ToolIndex& index, const std::string& set) {
  Rate r;
  json::value requests = json::parse(slurp(kLists + "/" + set));
  for (const json::value& v : requests.as_array()) {
    const json::object& o = v.as_object();
    std::string needs(o.at("needs").as_string());
    auto has = [&needs](const std::vector<oppx::daemon::ToolIndex::Hit>& hits) {
      return std::any_of(hits.begin(), hits.end(), [&](const auto& h) { return h.connector + "." + h.name == needs; });
    };
    r.found += has(index.search(o.at("query").as_string(), 6, o.at("request").as_string()));
    r.alone += has(index.search(o.at("query").as_string(), 6));
    ++r.total;
  }
  return r;
}

// The model server's side: every chat completion's body kept; the answers given in turn.
struct Recorder {
  std::mutex m;
  std::vector<json::object> bodies;
  std::vector<std::string> answers;  // one per completion, the last repeated
};

std::int64_t request_tokens(const json::object& body) {
  return oppx::estimate_tokens(json::serialize(body.at("messages")) + json::serialize(body.at("response_format")));
}

void write_user_config(const oppx::bench::BenchHome& home, const std::string& text) {
  std::string path = home.root() + "/config/oppx/config.json";
  std::ofstream(path) << text;
}

// One `oppx -p` turn; the bodies the model server received.
std::vector<json::object> turn(Recorder& rec, const std::string& oppx, std::vector<std::string> answers) {
  {
    std::lock_guard<std::mutex> l(rec.m);
    rec.bodies.clear();
    rec.answers = std::move(answers);
  }
  oppx::bench::capture({oppx, "-p", "which pull requests in acme/api wait for review?"});
  std::lock_guard<std::mutex> l(rec.m);
  return rec.bodies;
}

}  // namespace

int main(int argc, char** argv) {
  int searches = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--searches") searches = std::max(1, std::atoi(argv[i + 1]));
  }
  // 1. The hit rate.
  oppx::daemon::ToolIndex index;
  for (const auto& f : list_files()) {
    json::value v = json::parse(slurp(f));
    index.add(v.at("connector").as_string(), v.at("tools").as_array());
  }
  fmt::print("tool_search: {} tools of {} real servers' lists\n", index.size(), list_files().size());
  for (std::string set : {"requests.json", "heldout.json"}) {
    Rate r = hit_rate(index, set);
    double share = 100.0 * r.found / r.total;
    fmt::print(
        "  {:<14} needed tool among the 6 found: {:3} of {:3} ({:5.1f}%; target 95%: {})   the query alone: "
        "{:5.1f}%\n",
        set, r.found, r.total, share, share >= 95 ? "met" : "NOT met", 100.0 * r.alone / r.total);
    oppx::bench::report({"tool_search", "hit rate, " + set.substr(0, set.size() - 5), "%",
                         oppx::bench::summarize({share}), "", 0,
                         share >= 95 ? "target 95%: met" : "target 95%: NOT met"});
  }

  // 2. Tokens per request.
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const std::string dir = oppx::bench::self_dir();
  const std::string oppx = dir + "/oppx";
  json::object servers;
  for (const auto& f : list_files()) {
    std::string name = std::filesystem::path(f).stem().string();
    // `playwright` is the session's own browser in oppx; a user's Playwright server takes another name.
    if (name == "playwright") name = "playwright-mcp";
    json::object entry{{"command", "node"}, {"args", json::array{std::string(OPPX_BENCH_DIR) + "/list_server.mjs", f}}};
    servers[name] = entry;
    if (std::find(kSecond.begin(), kSecond.end(), name) != kSecond.end()) servers[name + "-2"] = entry;
  }
  Recorder rec;
  ModelServer model;
  if (!model.port()) {
    fmt::print(stderr, "tool_search: could not listen on 127.0.0.1\n");
    return 1;
  }
  model.script([&rec](const std::string& request) {
    std::lock_guard<std::mutex> l(rec.m);
    auto at = request.find("\r\n\r\n");
    boost::system::error_code ec;
    json::value body = json::parse(request.substr(at == std::string::npos ? 0 : at + 4), ec);
    if (!ec && body.is_object()) rec.bodies.push_back(body.as_object());
    std::size_t n = std::min(rec.bodies.size(), rec.answers.size()) - 1;
    return ModelServer::Answer{{rec.answers.empty() ? std::string() : rec.answers[n]}, {}, {}};
  });
  ::setenv("OPPX_SERVER", fmt::format("http://127.0.0.1:{}/v1", model.port()).c_str(), 1);
  ::setenv("OPPX_MODEL", "m1", 1);
  ::chdir(home.root().c_str());
  const std::string reply = R"({"action":"reply","text":"ok"})";
  oppx::bench::write_config(home, {});
  if (oppx::bench::running_connectors(oppx, home.socket()) != 0) {
    fmt::print("tool_search: not measured: the daemon did not start\n");
    return 1;
  }
  auto none = turn(rec, oppx, {reply});
  oppx::bench::write_config(home, servers);
  int running = oppx::bench::running_connectors(oppx, home.socket());
  if (running != static_cast<int>(servers.size())) {
    fmt::print("tool_search: not measured: {} of the {} connectors started\n", running, servers.size());
    oppx::bench::run_ms({oppx, "daemon", "stop"});
    return 1;
  }
  write_user_config(home, R"({"tool_search": "never"})");
  auto listed = turn(rec, oppx, {reply});
  write_user_config(home, R"({"tool_search": "always"})");
  auto searched = turn(rec, oppx, {R"({"action":"search_tools","query":"pull requests waiting for review"})", reply});
  if (none.empty() || listed.empty() || searched.size() < 2) {
    fmt::print("tool_search: not measured: the turns reached the model server {}, {} and {} times\n", none.size(),
               listed.size(), searched.size());
    return 1;
  }
  std::int64_t base = request_tokens(none[0]), full = request_tokens(listed[0]), first = request_tokens(searched[0]),
               after = request_tokens(searched[1]);
  std::int64_t tools = 0;
  auto c = oppx::bench::daemon_client(home.socket(), "tool_search");
  if (c) {
    auto r = c->call(oppx::proto::kMcpList, json::object{}, std::chrono::seconds(5));
    if (r)
      for (const auto& e : r->at("connectors").as_array()) tools += e.at("tools").as_int64();
  }
  fmt::print("tool_search: tokens per request, {} connectors, {} tools\n", servers.size(), tools);
  fmt::print("  no connector                       {:6} tokens\n", base);
  fmt::print("  every tool listed (today)          {:6} tokens   tools' share {:6} ({:.0f}% of a 32k context)\n", full,
             full - base, 100.0 * full / 32768);
  fmt::print("  with search, first request         {:6} tokens   tools' share {:6} ({:.1f}% of the listed share)\n",
             first, first - base, 100.0 * (first - base) / (full - base));
  double ratio = 100.0 * (after - base) / (full - base);
  fmt::print("  with search, after one search      {:6} tokens   tools' share {:6} ({:.1f}%; target 15%: {})\n", after,
             after - base, ratio, ratio <= 15 ? "met" : "NOT met");
  oppx::bench::report({"tool_search", "request tokens, 20 connectors, every tool listed", "tokens",
                       oppx::bench::summarize({static_cast<double>(full)}), "no connector", static_cast<double>(base)});
  oppx::bench::report({"tool_search", "request tokens, 20 connectors, after one search", "tokens",
                       oppx::bench::summarize({static_cast<double>(after)}), "every tool listed",
                       static_cast<double>(full), fmt::format("tools' share {:.1f}% of listed; target 15%", ratio)});

  // 3. tools/search through the daemon, beside mcp/list.
  std::vector<double> search_ms, list_ms;
  int failures = 0;
  for (int i = 0; c && i < searches; ++i) {
    auto t0 = Clock::now();
    auto s =
        c->call(oppx::proto::kToolsSearch, json::object{{"query", "list open pull requests"}}, std::chrono::seconds(5));
    auto t1 = Clock::now();
    auto l = c->call(oppx::proto::kMcpList, json::object{}, std::chrono::seconds(5));
    auto t2 = Clock::now();
    if (!s || !l) {
      ++failures;
      continue;
    }
    search_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    list_ms.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  oppx::bench::run_ms({oppx, "daemon", "stop"});
  if (search_ms.empty()) {
    fmt::print("tool_search: tools/search not measured ({} failures)\n", failures);
    return 1;
  }
  auto s = oppx::bench::summarize(search_ms), l = oppx::bench::summarize(list_ms);
  fmt::print("tool_search: tools/search over {} connectors' tools ({} searches, {} failures)\n", servers.size(),
             search_ms.size(), failures);
  fmt::print("  tools/search   median {:7.3f} ms   p90 {:7.3f} ms\n", s.median, s.p90);
  fmt::print("  mcp/list       median {:7.3f} ms   p90 {:7.3f} ms   ratio {:.2f}\n", l.median, l.p90,
             s.median / l.median);
  oppx::bench::report({"tool_search", "tools/search round trip, 20 connectors", "ms", s, "mcp/list", l.median});
  return 0;
}
