// The fixture of the streamable-HTTP connector tests (http_connector_test.cpp and
// http_faults_test.cpp): a private home, the fake server of tests/support/fake_http_mcp.js
// started with the faults asked for, and the connector as `oppx mcp tools --json` shows it.
#pragma once

#include "tests/support/harness.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace oppx::test {

// A socket listening on a free loopback port that nobody accepts on; `a` gets its address.
// Returns -1 when the OS refused one of the steps.
inline int loopback_listener(int backlog, sockaddr_in& a) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

struct Fake {
  std::unique_ptr<Process> proc;
  int port = 0, port2 = 0;
  std::string url(const std::string& scheme = "http", const std::string& host = "127.0.0.1") const {
    return scheme + "://" + host + ":" + std::to_string(port) + "/mcp";
  }
};

struct HttpConnectors : ::testing::Test {
  TempHome home;
  std::vector<std::unique_ptr<Process>> keep;

  Fake fake(std::vector<std::string> args) {
    args.insert(args.begin(), {"node", FAKE_HTTP_MCP});
    Fake f;
    f.proc = std::make_unique<Process>(args);
    EXPECT_TRUE(f.proc->wait_for_stdout(" ready\n")) << f.proc->err();
    std::sscanf(f.proc->out().c_str(), "ports %d %d", &f.port, &f.port2);
    EXPECT_GT(f.port, 0) << f.proc->out();
    return f;
  }
  static std::string http_entry(const std::string& name, const std::string& url, boost::json::object headers = {}) {
    boost::json::object o{{"type", "http"}, {"url", url}};
    if (!headers.empty()) o["headers"] = std::move(headers);
    return "\"" + name + "\":" + boost::json::serialize(o);
  }
  boost::json::object entry(const std::string& name) {
    Result r = oppx({"mcp", "tools", name, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? boost::json::parse(r.out).as_object() : boost::json::object{};
  }
  static std::string reason(const boost::json::object& e) {
    return e.contains("reason") ? std::string(e.at("reason").as_string()) : std::string();
  }
  Fake gone_then_back(const std::string& name, const std::string& retry_ms);
  void TearDown() override { oppx({"daemon", "stop"}); }
};

// Connector `name` on a fake that goes away after the start: a call finds nothing listening
// (unreachable), then a fake is back on the same port, and returned. The daemon (started by the
// first command, with this process's environment) tries an unreachable server again at most
// every `retry_ms`: OPPX_TEST_UNREACHABLE_RETRY_MS stands in for the 2 s, so that the tests show
// both sides of the limit without a clock to wait for.
inline Fake HttpConnectors::gone_then_back(const std::string& name, const std::string& retry_ms) {
  ::setenv("OPPX_TEST_UNREACHABLE_RETRY_MS", retry_ms.c_str(), 1);
  Fake f = fake({"record"});
  home.write_mcp_config(http_entry(name, f.url()));
  EXPECT_EQ(entry(name).at("state"), boost::json::value("running"));
  ::unsetenv("OPPX_TEST_UNREACHABLE_RETRY_MS");
  int port = f.port;
  f.proc.reset();
  Result down = oppx({"mcp", "call", name, "echo", R"({"message":"while down"})"});
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_NE(down.err.find("unreachable"), std::string::npos) << down.err;
  Fake again = fake({"record", "--port=" + std::to_string(port)});
  EXPECT_EQ(again.port, port);
  return again;
}

}  // namespace oppx::test
