// The anchors of bench/mcp_calls that are not oppxd: the official TypeScript SDK client
// (bench/sdk_client.mjs run in node, its one JSON line read back), server-everything in its
// streamable HTTP mode on a port of its own, and oppxd's cold start of a connector to its first
// call, timed through the socket. Everything here blocks its caller until it is done.
#pragma once

#include "bench/bench_support.h"

#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace oppx::bench {

// What the SDK client measured: per call (warm) or per run (cold), in µs.
struct SdkRun {
  Stats us;
  double calls_per_s = 0;  // warm only
  double close_us = 0;     // cold only: the median time close took (the server's exit)
  int calls = 0;           // calls (warm) or runs (cold) timed
  std::string error;       // why it was not measured, or its first failed call; empty when it was
  bool ok() const { return error.empty(); }
};

// `node script --npm-dir npm_dir args…`: its JSON line read back. A run that did not print one
// (node or the SDK missing) or that counted errors is not ok, with why.
SdkRun run_sdk_client(const std::string& script, const std::string& npm_dir, const std::vector<std::string>& args);

// A server started with PORT=<a free port> in its environment (as server-everything's
// streamableHttp mode reads it), in its own process group, its stdout discarded and its stderr
// read until it says "listening on port"; stopped (SIGTERM to its group) by the destructor.
class HttpServer {
 public:
  HttpServer() = default;
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Empty when it listens (url() is then its /mcp endpoint), else what went wrong.
  std::string start(const std::vector<std::string>& argv);
  const std::string& url() const { return url_; }

 private:
  pid_t pid_ = -1;
  std::thread drain_;  // reads its stderr to the end, so that the server never blocks on it
  std::string url_;
};

// oppxd's cold start, `runs` times: mcp/reconnect of `connector` (which starts stopping its
// program without waiting for its exit, starts it again, initializes it and lists its tools, and
// answers once it is running), then its first
// tools/call echo with `message`, whose text must be `expected`; in ms, per run. A failed run
// ends the series, with why in `error`.
struct ColdRun {
  Stats ms;
  std::string error;
};
ColdRun cold_through_daemon(SyncClient& c, const std::string& connector, const std::string& message,
                            const std::string& expected, int runs);

}  // namespace oppx::bench
