// bench/clients: tools/call echo through one warm oppxd from 1 to 256 socket clients at once, each
// with one call outstanding at every moment; the latency of each call and the calls per second at
// each number of clients (N calls a level, at least 40 a client), beside the same at one client (the ratio says what
// sharing costs). With
// --dat FILE it also writes the table gnuplot draws (bench/run: docs/performance.md).
//   usage: clients [--levels 1,2,4,…] [--calls N] [--dat FILE]
#include "bench/bench_support.h"
#include "proto/mcp_api.h"

#include <boost/json.hpp>

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <poll.h>

namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using oppx::SyncClient;
using oppx::bench::Stats;

struct Level {
  int clients = 0;
  std::vector<double> lat;  // µs
  double seconds = 0;
  int errors = 0;
  std::string first_error;
  double calls_per_s() const { return seconds > 0 ? lat.size() / seconds : 0; }
};

std::string request(std::int64_t id) {
  return fmt::format(
      R"({{"jsonrpc":"2.0","id":{},"method":"{}","params":{{"connector":"echo","tool":"echo","arguments":{{"message":"hi"}}}}}})"
      "\n",
      id, oppx::proto::kToolsCall);
}

// `calls` calls spread over the clients, each keeping one outstanding until its share is done.
void drive(std::vector<SyncClient>& clients, int calls, Level& out) {
  const std::size_t n = clients.size();
  std::vector<int> left(n, calls / static_cast<int>(n));
  for (std::size_t i = 0; i < static_cast<std::size_t>(calls) % n; ++i) ++left[i];
  std::vector<Clock::time_point> sent(n);
  std::vector<std::int64_t> ids(n, 0);
  std::vector<pollfd> fds(n);
  std::int64_t next_id = 1'000'000;
  std::size_t busy = 0;
  auto send = [&](std::size_t i) {
    if (left[i] == 0) return;
    ids[i] = next_id++;
    sent[i] = Clock::now();
    if (!clients[i].write_raw(request(ids[i]))) {
      if (out.errors++ == 0) out.first_error = "a write to the daemon failed";
      left[i] = 0;
      return;
    }
    --left[i];
    ++busy;
  };
  auto t0 = Clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    fds[i] = {clients[i].fd(), POLLIN, 0};
    send(i);
  }
  while (busy > 0) {
    int rc = ::poll(fds.data(), fds.size(), 30'000);
    if (rc <= 0) {
      if (out.errors == 0) out.first_error = "no reply within 30 s";
      out.errors += static_cast<int>(busy);
      break;
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto line = clients[i].read_line(std::chrono::milliseconds(1));
      if (!line) {
        if (line.error() == SyncClient::ReadFailure::kTimeout) continue;  // a part of a line
        if (out.errors++ == 0) out.first_error = "the daemon closed a connection";
        fds[i].fd = -1;
        --busy;
        continue;
      }
      auto now = Clock::now();
      boost::system::error_code ec;
      json::value v = json::parse(*line, ec);
      if (ec || !v.is_object() || !v.as_object().contains("id")) continue;  // a notification
      --busy;
      const json::object& o = v.as_object();
      if (o.at("id") != json::value(ids[i])) {
        if (out.errors++ == 0) out.first_error = "a reply came to the wrong caller: " + *line;
      } else if (o.contains("error")) {
        if (out.errors++ == 0) out.first_error = "an error: " + *line;
      } else {
        out.lat.push_back(std::chrono::duration<double, std::micro>(now - sent[i]).count());
      }
      send(i);
    }
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> levels{1, 2, 4, 8, 16, 32, 64, 128, 256};
  int calls = 4000;
  std::string dat;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has = i + 1 < argc;
    if (a == "--levels" && has) {
      levels.clear();
      std::stringstream in(argv[++i]);
      for (std::string x; std::getline(in, x, ',');) levels.push_back(std::max(1, std::atoi(x.c_str())));
    } else if (a == "--calls" && has) {
      calls = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--dat" && has) {
      dat = argv[++i];
    } else {
      fmt::print(stderr,
                 "usage: clients [--levels 1,2,4,…] [--calls N] [--dat FILE]\n"
                 "Times tools/call echo through one oppxd from many socket clients at once (default 1 to 256,\n"
                 "{} calls per level); prints p50/p99 and calls/s per level and the ratios to one client.\n",
                 calls);
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  std::signal(SIGPIPE, SIG_IGN);
  oppx::bench::BenchHome home;
  if (!home.ok()) return 1;
  const std::string oppx = oppx::bench::self_dir() + "/oppx";
  oppx::bench::write_config(home, oppx::bench::echo_servers(1));
  struct StopDaemon {
    std::string oppx;
    ~StopDaemon() { oppx::bench::run_ms({oppx, "daemon", "stop"}); }
  } stop{oppx};
  if (oppx::bench::running_connectors(oppx, home.socket()) != 1) {
    fmt::print(stderr, "clients: the echo connector did not start\n");
    return 1;
  }
  fmt::print("clients: tools/call echo through one oppxd to the C echo server, {} calls per level, one call\n", calls);
  fmt::print("outstanding per client\n  {:>7} {:>9} {:>9} {:>10} {:>12} {:>12}\n", "clients", "p50 µs", "p99 µs",
             "calls/s", "p50 / 1", "calls/s / 1");
  std::ofstream table;
  if (!dat.empty()) {
    table.open(dat);
    table << "# clients p50_us p99_us calls_per_s\n";
  }
  Level one;
  int failed = 0;
  for (int n : levels) {
    std::vector<SyncClient> clients;
    for (int i = 0; i < n; ++i) {
      auto c = oppx::bench::daemon_client(home.socket(), "clients");
      if (!c) break;
      clients.push_back(std::move(*c));
    }
    if (static_cast<int>(clients.size()) != n) {
      fmt::print("  {:>7} not measured: only {} connections were accepted\n", n, clients.size());
      ++failed;
      continue;
    }
    Level warm{n};
    drive(clients, std::min(calls / 10, 200) + n, warm);
    Level l{n};
    drive(clients, std::max(calls, 40 * n), l);  // at least 40 calls a client, so that each level lasts
    if (l.errors || l.lat.empty()) {
      fmt::print("  {:>7} FAILED: {} calls failed, the first with: {}\n", n, l.errors, l.first_error);
      ++failed;
      continue;
    }
    Stats s = oppx::bench::summarize(l.lat);
    if (one.lat.empty()) one = l;
    Stats base = oppx::bench::summarize(one.lat);
    fmt::print("  {:>7} {:9.1f} {:9.1f} {:10.0f} {:12.2f} {:12.2f}\n", n, s.median, s.p99, l.calls_per_s(),
               s.median / base.median, l.calls_per_s() / one.calls_per_s());
    if (table.is_open()) table << fmt::format("{} {:.1f} {:.1f} {:.0f}\n", n, s.median, s.p99, l.calls_per_s());
    oppx::bench::report({"clients", fmt::format("tools/call echo, {} client{} at once", n, n == 1 ? "" : "s"), "µs", s,
                         fmt::format("{} client{}", one.clients, one.clients == 1 ? "" : "s"), base.median,
                         fmt::format("{:.0f} calls/s, {:.2f}× the first level's", l.calls_per_s(),
                                     l.calls_per_s() / one.calls_per_s())});
  }
  return failed ? 1 : 0;
}
