// Internal to the HTTP client (common/http_client.cpp and its tests include it: it pulls in
// Beast). Reading one answer off any Beast stream: its headers, then its body in pieces, through
// Beast's parser (chunked coding, Content-Length, a peer that closes early are all its checks).
// Templates over the stream, so that tests run them on boost::beast::test::stream.
#pragma once

#include "common/http.h"
#include "common/text.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include <array>

namespace oppx::http::wire {

namespace beast = boost::beast;
using boost::system::error_code;
using ResponseParser = beast::http::response_parser<beast::http::buffer_body>;
inline constexpr auto kTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

// Reads the status line and the headers (the body stays unread).
template <class Stream>
boost::asio::awaitable<error_code> read_head(Stream& s, beast::flat_buffer& buffer, ResponseParser& parser) {
  parser.body_limit(boost::none);  // bodies are capped by their readers: a stream may be long
  auto [ec, n] = co_await beast::http::async_read_header(s, buffer, parser, kTuple);
  co_return ec;
}

// Reads the next piece of the body (at most `space.size()` bytes) into `out`; `done` once the
// body ended as its framing says. An early close is an error (beast::http::error::partial_message).
template <class Stream>
boost::asio::awaitable<error_code> read_piece(Stream& s, beast::flat_buffer& buffer, ResponseParser& parser,
                                              std::array<char, 16384>& space, std::string& out, bool& done) {
  out.clear();
  done = parser.is_done();
  if (done) co_return error_code{};
  auto& body = parser.get().body();
  body.data = space.data();
  body.size = space.size();
  auto [ec, n] = co_await beast::http::async_read_some(s, buffer, parser, kTuple);
  if (ec == beast::http::error::need_buffer) ec = {};
  std::size_t got = space.size() - parser.get().body().size;
  out.assign(space.data(), got);
  done = parser.is_done();
  // A body without framing ends with the connection: Beast reports end_of_stream with the last bytes.
  if (ec == beast::http::error::end_of_stream && (got > 0 || done)) ec = {};
  co_return ec;
}

// The status and headers of a parsed answer, as the client hands them on.
inline Response head_of(const ResponseParser& parser) {
  Response r;
  const auto& h = parser.get();
  r.status = h.result_int();
  for (const auto& f : h) r.headers.push_back(Header{std::string(f.name_string()), std::string(f.value()), {}});
  std::string ct(h[beast::http::field::content_type]);
  r.media_type = ct.substr(0, ct.find(';'));
  r.media_type.erase(r.media_type.find_last_not_of(" \t") + 1);
  r.media_type = oppx::lower(r.media_type);
  return r;
}

}  // namespace oppx::http::wire
