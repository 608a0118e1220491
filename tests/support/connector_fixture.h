// The fixture of the connector tests: a TempHome with the user's mcp.json written by the test,
// stdio entries for it, `oppx mcp tools <name> --json` as the way to wait for a connector, a
// client on the socket for calls with options the CLI has not, and files the fake server writes.
#pragma once

#include "tests/support/harness.h"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace oppx::test {

class ConnectorFixture : public ::testing::Test {
 protected:
  TempHome home;

  void write_config(const std::string& servers) { home.write_mcp_config(servers); }
  static std::string stdio(const std::string& name, const std::string& command, const std::vector<std::string>& args) {
    return stdio_entry(name, command, args);
  }
  // A folder of its own for one fake server's files (its pids, what it counted).
  std::string fake_dir(const std::string& name) {
    std::string d = home.root() + "/" + name;
    ::mkdir(d.c_str(), 0700);
    return d;
  }
  // The connector as `mcp tools --json` gives it, once it is no longer starting.
  boost::json::object entry(const std::string& name) {
    Result r = oppx({"mcp", "tools", name, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? boost::json::parse(r.out).as_object() : boost::json::object{};
  }
  // Starts connector "one" (fake_mcp_server ok) and returns its pid. The second argument is only
  // a marker, so that pgrep finds this test's child and not one of a test running beside it.
  pid_t start_marked_fake() {
    write_config(stdio("one", FAKE_MCP_SERVER, {"ok", home.root()}));
    EXPECT_EQ(entry("one").at("state"), boost::json::value("running"));
    Result ps = run({"pgrep", "-f", std::string(FAKE_MCP_SERVER) + " ok " + home.root()});
    return ps.exit_code == 0 ? static_cast<pid_t>(std::stol(ps.out)) : -1;
  }
  // A client on the daemon's socket that said hello with this process's environment.
  SyncClient client() {
    auto c = hello_client(home);
    if (!c) throw std::runtime_error("no daemon to talk to");
    return std::move(*c);
  }
  static std::vector<std::string> lines(const std::string& path) {
    std::ifstream f(path);
    std::vector<std::string> out;
    for (std::string l; std::getline(f, l);) out.push_back(l);
    return out;
  }
  static pid_t last_pid(const std::string& dir) {
    auto l = lines(dir + "/pids");
    return l.empty() ? -1 : static_cast<pid_t>(std::stol(l.back()));
  }
  void TearDown() override {
    oppx({"daemon", "stop"});
    ::unsetenv("OPPX_MCP_START_TIMEOUT_MS");
  }
};

}  // namespace oppx::test
