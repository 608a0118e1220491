// A blocking JSON-RPC client of the daemon's socket, for the CLI, tests and benchmarks: plain
// POSIX calls, no event loop, every wait bounded by a deadline. Notifications that arrive while
// a call waits go to the handler given with on_notification, else they are skipped.
#pragma once

#include "proto/jsonrpc.h"

#include <boost/json/value.hpp>
#include <boost/system/result.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace oppx {

struct ConnectError {
  enum class Kind { kNoDaemon, kPermission, kPathTooLong, kOther };
  Kind kind = Kind::kOther;
  std::string message;
};

class SyncClient {
 public:
  using Clock = std::chrono::steady_clock;

  static boost::system::result<SyncClient, ConnectError> connect(const std::string& socket_path);
  // A client over a connected socket it now owns (one end of a socketpair the daemon serves).
  static SyncClient adopt(int fd) { return SyncClient(fd); }

  SyncClient(SyncClient&& other) noexcept;
  SyncClient& operator=(SyncClient&& other) noexcept;
  ~SyncClient();

  // One request, waiting for its reply (skipping notifications and other ids) until `timeout`.
  // A broken connection is kind "disconnected"; no reply in time is kind "timeout".
  boost::system::result<boost::json::value, proto::RpcError> call(std::string_view method,
                                                                  const boost::json::value& params,
                                                                  std::chrono::milliseconds timeout);

  void on_notification(std::function<void(const std::string& method, const boost::json::value& params)> fn) {
    on_notification_ = std::move(fn);
  }

  // Requests from the daemon (agent/ask, permissions/ask) that arrive while a call waits: the handler's answer is
  // written back at once. Without a handler they are answered "method not found".
  using RequestResult = boost::system::result<boost::json::value, proto::RpcError>;
  using RequestHandler = std::function<RequestResult(const std::string& method, const boost::json::value& params)>;
  void on_request(RequestHandler fn) { on_request_ = std::move(fn); }

  // From another thread, while call() waits: asks the daemon to cancel that request
  // ($/cancelRequest, docs/protocol.md), so that call() returns with its "cancelled" error while
  // the connection, and its session, stay. False when no call is waiting or the write failed.
  bool cancel_in_flight();
  // From another thread, while call() waits: a request whose reply nobody waits for (call() skips
  // it), such as agent/cancel during agent/turn. False when the write failed.
  bool send(std::string_view method, const boost::json::value& params);
  // Raw access for tests: write bytes as they are, read one line (without its newline).
  bool write_raw(std::string_view bytes);
  enum class ReadFailure { kTimeout, kEof, kIo };
  boost::system::result<std::string, ReadFailure> read_line(std::chrono::milliseconds timeout);
  int fd() const { return fd_; }

 private:
  explicit SyncClient(int fd) : fd_(fd) {}
  bool write_locked(std::string_view bytes);  // with write_mutex_ held
  void answer(const proto::Request& req);     // a request from the daemon, with on_request_
  int fd_ = -1;
  std::atomic<std::int64_t> next_id_{1};  // send() may take one while call() waits
  std::string buffer_;
  std::function<void(const std::string&, const boost::json::value&)> on_notification_;
  RequestHandler on_request_;
  std::unique_ptr<std::mutex> write_mutex_ = std::make_unique<std::mutex>();  // cancel_in_flight writes too
  std::atomic<std::int64_t> in_flight_{0};                                    // the id call() waits for; 0: none
};

}  // namespace oppx
