// A small OpenAI-compatible model server on a thread of the benchmark's own: /v1/models, 404 for
// the rest of GET, and one reply action to every chat completion, or what a script gives (streamed
// piece by piece, slowly if asked); it records when the first byte of each request arrived, on the
// benchmark's clock. One connection at a time: a slow answer holds the next request back.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace oppx::bench {

using Clock = std::chrono::steady_clock;

class ModelServer {
 public:
  ModelServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0) return;
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~ModelServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }
  struct Hit {
    Clock::time_point at;
    bool completion = false;
  };
  std::vector<Hit> take() {
    std::lock_guard<std::mutex> l(m_);
    return std::exchange(hits_, {});
  }
  // A chat completion's answer: its content in `pieces`, each an event of the stream, `gap` apart;
  // `done` runs once the last was written (or the client went away).
  struct Answer {
    std::vector<std::string> pieces;
    std::chrono::milliseconds gap{0};
    std::function<void()> done;
  };
  // From now on every chat completion is answered with what `fn` makes of its request (head and
  // body), on the server's thread.
  void script(std::function<Answer(const std::string& request)> fn) {
    std::lock_guard<std::mutex> l(m_);
    script_ = std::move(fn);
  }

 private:
  void serve() {
    while (!stop_) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      handle(c);
      ::close(c);
    }
  }
  void handle(int c) {
    std::string req;
    char buf[8192];
    bool first = true;
    Clock::time_point at;
    std::size_t head_end = std::string::npos, need = 0;
    for (;;) {
      ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0) return;
      if (first) at = Clock::now(), first = false;
      req.append(buf, static_cast<std::size_t>(n));
      if (head_end == std::string::npos && (head_end = req.find("\r\n\r\n")) != std::string::npos) {
        auto cl = req.find("Content-Length: ");
        if (cl == std::string::npos) cl = req.find("content-length: ");
        need = head_end + 4 +
               (cl != std::string::npos && cl < head_end ? std::strtoul(req.c_str() + cl + 16, nullptr, 10) : 0);
      }
      if (head_end != std::string::npos && req.size() >= need) break;
    }
    bool completion = req.rfind("POST /v1/chat/completions", 0) == 0;
    {
      std::lock_guard<std::mutex> l(m_);
      hits_.push_back({at, completion});
    }
    std::function<Answer(const std::string&)> script;
    {
      std::lock_guard<std::mutex> l(m_);
      script = script_;
    }
    if (completion && script) return stream(c, script(req));
    std::string type = "application/json", body, status = "200 OK";
    if (completion) {
      type = "text/event-stream";
      body =
          "data: "
          "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"{\\\"action\\\":\\\"reply\\\",\\\"text\\\":\\\"ok\\\"}"
          "\"},"
          "\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    } else if (req.rfind("GET /v1/models", 0) == 0) {
      body = R"({"object":"list","data":[{"id":"m1","max_model_len":32768}]})";
    } else {
      status = "404 Not Found";
      body = "{}";
    }
    std::string out =
        fmt::format("HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", status,
                    type, body.size(), body);
    (void)!::write(c, out.data(), out.size());
  }
  // Chunked, so that each piece reaches the client when it is written; MSG_NOSIGNAL because a
  // cancelled turn closes the connection mid-stream.
  void stream(int c, const Answer& a) {
    auto send = [c](const std::string& s) {
      return ::send(c, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
    };
    auto chunk = [&send](const std::string& data) { return send(fmt::format("{:x}\r\n{}\r\n", data.size(), data)); };
    bool ok = send(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: "
        "close\r\n\r\n");
    for (std::size_t i = 0; ok && i < a.pieces.size(); ++i) {
      if (i > 0 && a.gap.count() > 0) std::this_thread::sleep_for(a.gap);
      boost::json::object delta{{"content", a.pieces[i]}};
      boost::json::object event{{"choices", boost::json::array{boost::json::object{{"index", 0}, {"delta", delta}}}}};
      ok = chunk("data: " + boost::json::serialize(event) + "\n\n");
    }
    if (ok) {
      ok = chunk("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    }
    if (ok) send("0\r\n\r\n");
    if (a.done) a.done();
  }
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex m_;
  std::vector<Hit> hits_;
  std::function<Answer(const std::string&)> script_;
};

}  // namespace oppx::bench
