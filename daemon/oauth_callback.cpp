// CallbackListener: an acceptor on 127.0.0.1 and one short coroutine per connection. The page
// it answers with is plain HTML of fixed words (HTML-escaped), with no script and nothing fetched.
#include "daemon/oauth_callback.h"

#include "common/log.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <fmt/format.h>

// As in http_transport.cpp: GCC 12's false positive on Asio's coroutine frames.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace oppx::daemon {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kMaxRequest = 16u << 10;
constexpr auto kRequestTime = std::chrono::seconds(10);

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string response(int status, std::string_view reason, const CallbackListener::Page& page) {
  std::string body = fmt::format(
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>{0}</title></head>"
      "<body style=\"font-family:sans-serif;margin:3em\"><h1>{0}</h1><p>{1}</p></body></html>\n",
      html_escape(page.title), html_escape(page.text));
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\n"
      "Referrer-Policy: no-referrer\r\nConnection: close\r\n\r\n{}",
      status, reason, body.size(), body);
}

}  // namespace

struct CallbackListener::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io, OnCallback fn) : io(io), acceptor(io), on_callback(std::move(fn)) {}
  asio::io_context& io;
  tcp::acceptor acceptor;
  OnCallback on_callback;
  int port = 0;
  bool closed = false;

  void close() {
    if (closed) return;
    closed = true;
    boost::system::error_code ec;
    acceptor.close(ec);
    on_callback = nullptr;
  }

  asio::awaitable<void> serve(tcp::socket socket) {
    auto self = shared_from_this();
    asio::steady_timer limit(io, kRequestTime);
    limit.async_wait([&socket](boost::system::error_code ec) {
      if (!ec) socket.close(ec);
    });
    std::string buffer;
    auto [ec, n] =
        co_await asio::async_read_until(socket, asio::dynamic_buffer(buffer, kMaxRequest), "\r\n\r\n", kTuple);
    limit.cancel();
    if (ec) co_return;
    // "GET /callback?code=…&state=… HTTP/1.1"
    std::string_view line(buffer.data(), buffer.find("\r\n"));
    auto sp1 = line.find(' '), sp2 = line.rfind(' ');
    std::string out;
    if (sp1 == std::string_view::npos || sp2 <= sp1 || line.substr(0, sp1) != "GET") {
      out = response(405, "Method Not Allowed", {false, "Not a login", "This address only takes a login's redirect."});
    } else {
      std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      std::string_view path = target.substr(0, target.find('?'));
      std::string query = target.size() > path.size() ? std::string(target.substr(path.size() + 1)) : "";
      if (path != "/callback") {
        out = response(404, "Not Found", {false, "Not found", "This address only takes a login's redirect."});
      } else if (closed || !on_callback) {
        out = response(410, "Gone", {false, "This login has ended", "Start it again with `oppx mcp login`."});
      } else {
        Page page = on_callback(query);
        out = response(200, "OK", page);
        if (page.done) close();
      }
    }
    (void)co_await asio::async_write(socket, asio::buffer(out), kTuple);
    socket.shutdown(tcp::socket::shutdown_both, ec);
  }

  asio::awaitable<void> accept_loop() {
    auto self = shared_from_this();
    while (!closed) {
      auto [ec, socket] = co_await acceptor.async_accept(kTuple);
      if (ec || closed) break;
      asio::co_spawn(io, serve(std::move(socket)), asio::detached);
    }
  }
};

CallbackListener::CallbackListener(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
CallbackListener::~CallbackListener() { impl_->close(); }

boost::system::result<std::shared_ptr<CallbackListener>, std::string> CallbackListener::listen(asio::io_context& io,
                                                                                               int port,
                                                                                               OnCallback on_callback) {
  auto impl = std::make_shared<Impl>(io, std::move(on_callback));
  boost::system::error_code ec;
  tcp::endpoint at(asio::ip::make_address_v4("127.0.0.1"), static_cast<unsigned short>(port));
  impl->acceptor.open(at.protocol(), ec);
  if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(at, ec);
  if (!ec) impl->acceptor.listen(8, ec);
  if (ec) {
    return port ? fmt::format(
                      "the login's callback port 127.0.0.1:{} cannot be used ({}); free it, or change "
                      "\"callbackPort\" of the connector's \"oauth\"",
                      port, ec.message())
                : fmt::format("no local port for the login's callback: {}", ec.message());
  }
  impl->port = impl->acceptor.local_endpoint().port();
  asio::co_spawn(io, impl->accept_loop(), asio::detached);
  return std::shared_ptr<CallbackListener>(new CallbackListener(impl));
}

int CallbackListener::port() const { return impl_->port; }
std::string CallbackListener::redirect_uri() const { return fmt::format("http://127.0.0.1:{}/callback", impl_->port); }
void CallbackListener::close() { impl_->close(); }

}  // namespace oppx::daemon
