// run_sdk_client, HttpServer and cold_through_daemon: see sdk_anchors.h.
#include "bench/sdk_anchors.h"

#include "proto/mcp_api.h"

#include <boost/json.hpp>
#include <fmt/format.h>

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace oppx::bench {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

SdkRun run_sdk_client(const std::string& script, const std::string& npm_dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"node", script, "--npm-dir", npm_dir};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out = capture(argv);
  SdkRun run;
  boost::system::error_code ec;
  json::value v = json::parse(out, ec);
  const json::object* o = !ec && v.is_object() ? &v.as_object() : nullptr;
  if (!o || !o->contains("p50_us") || !o->contains("errors")) {
    run.error = "not measured (node or the SDK missing? run packaging/bootstrap.sh)";
    return run;
  }
  auto num = [o](const char* key) {
    const json::value* x = o->if_contains(key);
    return x && x->is_number() ? x->to_number<double>() : 0.0;
  };
  run.us.median = num("p50_us");
  run.us.p90 = num("p90_us");
  run.us.p99 = num("p99_us");
  run.us.min = num("min_us");
  run.calls_per_s = num("calls_per_s");
  run.close_us = num("close_p50_us");
  run.calls = static_cast<int>(num("calls"));
  if (int errors = static_cast<int>(num("errors")); errors > 0) {
    const json::value* first = o->if_contains("first_error");
    run.error = fmt::format("FAILED: {} of its calls failed, the first with: {}", errors,
                            first && first->is_string() ? std::string(first->as_string()) : "(not said)");
  }
  return run;
}

namespace {

// A port of 127.0.0.1 that nothing listens on now (the kernel's pick); 0 when none was given.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

}  // namespace

HttpServer::~HttpServer() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  if (drain_.joinable()) drain_.join();
}

std::string HttpServer::start(const std::vector<std::string>& args) {
  int port = free_port();
  if (port == 0) return "no free port on 127.0.0.1";
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) return "pipe2 failed";
  std::vector<std::string> env_strings{"PORT=" + std::to_string(port)};
  for (char** e = environ; e && *e; ++e) {
    if (std::string_view(*e).substr(0, 5) != "PORT=") env_strings.emplace_back(*e);
  }
  std::vector<char*> envp = c_argv(env_strings), argv = c_argv(args);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // its own group, stopped as one
  posix_spawnattr_setpgroup(&attr, 0);
  int rc = ::posix_spawnp(&pid_, argv[0], &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(err[1]);
  if (rc != 0) {
    pid_ = -1;
    ::close(err[0]);
    return fmt::format("could not start {}: {}", args.at(0), std::strerror(rc));
  }
  // Its stderr until it listens, within 30 s; then a thread reads the rest.
  std::string said;
  const auto deadline = Clock::now() + 30s;
  bool listening = false;
  while (!listening && Clock::now() < deadline) {
    pollfd p{err[0], POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0) continue;
    char buf[1024];
    ssize_t n = ::read(err[0], buf, sizeof buf);
    if (n <= 0) break;  // it ended
    said.append(buf, static_cast<std::size_t>(n));
    listening = said.find("listening on port") != std::string::npos;
  }
  int fd = err[0];
  drain_ = std::thread([fd] {
    char buf[4096];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
    ::close(fd);
  });
  if (!listening) return fmt::format("{} did not say it listens within 30 s; it said: {}", args.back(), said);
  url_ = fmt::format("http://127.0.0.1:{}/mcp", port);
  return "";
}

ColdRun cold_through_daemon(SyncClient& c, const std::string& connector, const std::string& message,
                            const std::string& expected, int runs) {
  ColdRun run;
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    auto r = c.call(proto::kMcpReconnect, json::object{{"name", connector}}, 60s);
    if (!r) {
      run.error = "mcp/reconnect failed: " + r.error().message;
      break;
    }
    const json::value* list = r->is_object() ? r->as_object().if_contains("connectors") : nullptr;
    if (!list || !list->is_array() || list->as_array().size() != 1 ||
        list->as_array()[0].at("state") != json::value("running")) {
      run.error = "after mcp/reconnect it is not running: " + json::serialize(*r);
      break;
    }
    auto call =
        c.call(proto::kToolsCall,
               json::object{{"connector", connector}, {"tool", "echo"}, {"arguments", {{"message", message}}}}, 30s);
    if (!call) {
      run.error = "its first tools/call failed: " + call.error().message;
      break;
    }
    const json::value* text = call->is_object() ? call->as_object().if_contains("text") : nullptr;
    if (!text || *text != json::value(expected)) {
      run.error = "unexpected reply to its first tools/call: " + json::serialize(*call);
      break;
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  run.ms = summarize(std::move(ms));
  return run;
}

}  // namespace oppx::bench
