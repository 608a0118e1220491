// common/http_client: the answer's framing read off an in-memory stream (one byte at a time, a
// peer that closes mid-body, a bad chunk size), and the client against real local servers (a
// scripted socket server in a thread, node's https): redirects, limits, streaming, TLS.
#include "common/http.h"
#include "common/http_client.h"
#include "common/http_wire.h"
#include "tests/support/harness.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace oppx::test {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;

struct Read {
  boost::system::error_code ec;
  http::Response head;
  std::string body;
  std::vector<std::string> pieces;
};

// Feeds `wire` to the reader over a test stream that hands out `read_size` bytes a read.
Read read_answer(const std::string& wire, std::size_t read_size, bool close_after = true) {
  asio::io_context io;
  beast::test::stream client(io), server(io);
  client.connect(server);
  client.read_size(read_size);
  client.append(wire);
  if (close_after) server.close();
  Read r;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        beast::flat_buffer buffer;
        http::wire::ResponseParser parser;
        std::array<char, 16384> space{};
        r.ec = co_await http::wire::read_head(client, buffer, parser);
        if (r.ec) co_return;
        r.head = http::wire::head_of(parser);
        for (bool done = false; !done;) {
          std::string piece;
          r.ec = co_await http::wire::read_piece(client, buffer, parser, space, piece, done);
          if (r.ec) co_return;
          if (!piece.empty()) r.pieces.push_back(piece);
          r.body += piece;
        }
      },
      asio::detached);
  io.run();
  return r;
}

TEST(HttpWire, AChunkedAnswerReadOneByteAtATime) {
  Read r = read_answer(
      "HTTP/1.1 200 OK\r\nContent-Type: Text/Event-Stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n",
      1);
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.head.status, 200u);
  EXPECT_EQ(r.head.media_type, "text/event-stream");
  EXPECT_EQ(r.head.header("content-type"), "Text/Event-Stream; charset=utf-8");
  EXPECT_EQ(r.body, "hello, world");
  EXPECT_GT(r.pieces.size(), 1u);  // handed on as it came, not gathered
}

TEST(HttpWire, APeerThatClosesMidBodyIsAnErrorNotAShortBody) {
  Read r = read_answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd", 3);
  EXPECT_EQ(r.ec, beast::http::error::partial_message) << r.ec.message();
  Read chunked = read_answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", 1);
  EXPECT_EQ(chunked.ec, beast::http::error::partial_message) << chunked.ec.message();
}

TEST(HttpWire, ABadChunkSizeIsAnErrorNotATruncation) {
  Read r = read_answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nmore\r\n0\r\n\r\n", 4);
  EXPECT_TRUE(r.ec);
  EXPECT_NE(r.ec, beast::http::error::end_of_stream);
}

TEST(HttpWire, ABodyWithoutFramingEndsWithTheConnection) {
  Read r = read_answer("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it", 2);
  ASSERT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.body, "all of it");
}

TEST(HttpWire, AStatusLineThatIsNotHttpIsRefused) {
  Read r = read_answer("SSH-2.0-OpenSSH_9.2\r\n\r\n", 64);
  EXPECT_TRUE(r.ec);
}

TEST(HttpUrl, PartsAndRefusals) {
  auto u = http::parse_url("https://Example.com:8443/v1/chat?x=1");
  ASSERT_TRUE(u) << u.error();
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, "8443");
  EXPECT_EQ(u->path, "/v1/chat?x=1");
  EXPECT_EQ(u->origin, "https://Example.com:8443");
  EXPECT_EQ(http::parse_url("http://[::1]/")->host_header, "[::1]");
  EXPECT_EQ(http::parse_url("ftp://x/").error(), "its scheme is \"ftp\", not http or https");
  EXPECT_NE(http::parse_url("https://user:pw@x/").error().find("user name or password"), std::string::npos);
  EXPECT_FALSE(http::parse_url("localhost:8000"));
}

// A socket server on 127.0.0.1 that answers each connection from a script, in a thread of its
// own, and keeps what each request said.
class ScriptedServer {
 public:
  // Each answer: the bytes to write after reading one request; "" means: read it, say nothing.
  explicit ScriptedServer(std::vector<std::string> answers) : answers_(std::move(answers)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd_, 8);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    for (int c : open_) ::shutdown(c, SHUT_RDWR);
    thread_.join();
    for (int c : open_) ::close(c);
  }
  std::string url(const std::string& path = "/") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::vector<std::string> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void serve() {
    for (auto& answer : answers_) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0 || stop_) return;
      std::string in;
      char buf[4096];
      for (;;) {
        auto head_end = in.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          std::size_t want = 0;
          if (auto cl = in.find("Content-Length: "); cl != std::string::npos && cl < head_end)
            want = std::stoul(in.substr(cl + 16));
          if (in.size() >= head_end + 4 + want) break;
        }
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
      }
      {
        std::lock_guard lock(mu_);
        requests_.push_back(in);
      }
      if (answer.empty()) {
        open_.push_back(c);  // silent: kept open until the server ends
        continue;
      }
      ::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }

  std::vector<std::string> answers_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::vector<int> open_;
};

TEST(HttpClient, ARedirectToAnotherOriginCarriesNoCredentials) {
  ScriptedServer there({"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"});
  ScriptedServer here(
      {"HTTP/1.1 307 Temporary Redirect\r\nLocation: " + there.url("/moved") + "\r\nContent-Length: 0\r\n\r\n"});
  http::Request req;
  req.method = "POST";
  req.url = here.url("/v1/chat/completions");
  req.headers = {{"Authorization", "Bearer sk-secret-123", {}}, {"Content-Type", "application/json", {}}};
  req.body = R"({"a":1})";
  auto r = http::fetch(req);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200u);
  EXPECT_EQ(r->body, "ok");
  EXPECT_EQ(r->at.origin, http::origin_of(there.url()));
  ASSERT_EQ(here.requests().size(), 1u);
  EXPECT_NE(here.requests()[0].find("Authorization: Bearer sk-secret-123"), std::string::npos);
  ASSERT_EQ(there.requests().size(), 1u);
  std::string moved = there.requests()[0];
  EXPECT_EQ(moved.rfind("POST /moved HTTP/1.1\r\n", 0), 0u) << moved;  // 307 keeps the method and body
  EXPECT_NE(moved.find(R"({"a":1})"), std::string::npos) << moved;
  EXPECT_EQ(moved.find("sk-secret-123"), std::string::npos) << moved;
}

TEST(HttpClient, ASilentServerFailsWithinTheHeadersLimit) {
  ScriptedServer silent({""});
  http::Request req;
  req.url = silent.url();
  req.timeouts.headers = 300ms;
  auto start = std::chrono::steady_clock::now();
  auto r = http::fetch(req);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "timeout");
  EXPECT_NE(r.error().message.find("took over 0.3 s to send the headers"), std::string::npos) << r.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(HttpClient, NothingListeningIsUnreachable) {
  int port;
  {
    ScriptedServer gone({});
    port = std::stoi(gone.url().substr(17));
  }
  http::Request req;
  req.url = "http://127.0.0.1:" + std::to_string(port) + "/v1/models";
  auto r = http::fetch(req);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, "unreachable");
  EXPECT_NE(r.error().message.find("http://127.0.0.1:" + std::to_string(port) + " is unreachable"), std::string::npos)
      << r.error().message;
}

TEST(HttpClient, TheBodyStreamsChunkByChunkAndTheReaderMayStop) {
  ScriptedServer s(
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"
       "7\r\ndata: 1\r\n7\r\ndata: 2\r\n0\r\n\r\n",
       "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabcdef"});
  http::Request req;
  req.url = s.url();
  std::string seen;
  auto r = http::fetch(req, [&](std::string_view piece) {
    seen += piece;
    return true;
  });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->media_type, "text/event-stream");
  EXPECT_EQ(seen, "data: 1data: 2");
  EXPECT_TRUE(r->body.empty());
  // Over the cap: refused, not cut silently.
  auto capped = http::fetch(req, 4);
  ASSERT_FALSE(capped);
  EXPECT_EQ(capped.error().kind, "protocol");
  EXPECT_NE(capped.error().message.find("over 4 bytes"), std::string::npos) << capped.error().message;
}

TEST(HttpClient, HttpsIsVerifiedAgainstTheTrustedRoots) {
  TempHome home;
  LocalhostCert made = localhost_cert(home.root());
  ASSERT_EQ(made.made.exit_code, 0) << made.made.err;
  const std::string &cert = made.cert, &key = made.key;
  ::setenv("FAKE_TLS_CERT", cert.c_str(), 1);
  ::setenv("FAKE_TLS_KEY", key.c_str(), 1);
  Process server({"node", std::string(OPPX_TEST_SUPPORT) + "/fake_model_server.js", "info", "8192"});
  ::unsetenv("FAKE_TLS_CERT");
  ::unsetenv("FAKE_TLS_KEY");
  ASSERT_TRUE(server.wait_for_stdout("\n")) << server.err();
  std::string port = server.out().substr(5, server.out().find('\n') - 5);
  http::Request req;
  req.url = "https://localhost:" + port + "/v1/info";
  auto untrusted = http::fetch(req);
  ASSERT_FALSE(untrusted);
  EXPECT_NE(untrusted.error().message.find("the TLS handshake with https://localhost:" + port + " failed"),
            std::string::npos)
      << untrusted.error().message;
  ::setenv("SSL_CERT_FILE", cert.c_str(), 1);
  auto trusted = http::fetch(req);
  ::unsetenv("SSL_CERT_FILE");
  ASSERT_TRUE(trusted) << trusted.error().message;
  EXPECT_EQ(trusted->status, 200u);
  EXPECT_NE(trusted->body.find("\"context_length\":8192"), std::string::npos) << trusted->body;
}

}  // namespace
}  // namespace oppx::test
