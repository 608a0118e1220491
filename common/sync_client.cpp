// SyncClient: connect(2) to the socket path, write with MSG_NOSIGNAL (a closed daemon is an
// error, never a SIGPIPE), read with poll(2) against a deadline.
#include "common/sync_client.h"

#include <boost/json/parse.hpp>

#include <cerrno>
#include <optional>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace oppx {

namespace json = boost::json;
using proto::ErrorCode;
using proto::RpcError;

boost::system::result<SyncClient, ConnectError> SyncClient::connect(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return ConnectError{ConnectError::Kind::kPathTooLong,
                        "the socket path " + path + " is " + std::to_string(path.size()) +
                            " bytes, over the limit of " + std::to_string(sizeof addr.sun_path - 1) +
                            "; set OPPX_SOCKET to a shorter path"};
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ConnectError{ConnectError::Kind::kOther, std::string("socket: ") + std::strerror(errno)};
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = errno;
    ::close(fd);
    ConnectError e;
    e.message = "cannot connect to " + path + ": " + std::strerror(err);
    if (err == ENOENT || err == ECONNREFUSED || err == ENOTDIR) {
      e.kind = ConnectError::Kind::kNoDaemon;
    } else if (err == EACCES || err == EPERM) {
      e.kind = ConnectError::Kind::kPermission;
    }
    return e;
  }
  return SyncClient(fd);
}

SyncClient::SyncClient(SyncClient&& other) noexcept
    : fd_(other.fd_),
      next_id_(other.next_id_.load()),
      buffer_(std::move(other.buffer_)),
      on_notification_(std::move(other.on_notification_)),
      on_request_(std::move(other.on_request_)),
      write_mutex_(std::move(other.write_mutex_)),
      in_flight_(other.in_flight_.load()) {
  other.fd_ = -1;
}

SyncClient& SyncClient::operator=(SyncClient&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    next_id_ = other.next_id_.load();
    buffer_ = std::move(other.buffer_);
    on_notification_ = std::move(other.on_notification_);
    on_request_ = std::move(other.on_request_);
    write_mutex_ = std::move(other.write_mutex_);
    in_flight_ = other.in_flight_.load();
    other.fd_ = -1;
  }
  return *this;
}

SyncClient::~SyncClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool SyncClient::write_raw(std::string_view bytes) {
  if (!write_mutex_) return false;  // moved from
  std::lock_guard lock(*write_mutex_);
  return write_locked(bytes);
}

bool SyncClient::write_locked(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

boost::system::result<std::string, SyncClient::ReadFailure> SyncClient::read_line(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();  // 1 ms waits, not 0
    if (left <= 0) return ReadFailure::kTimeout;
    pollfd p{fd_, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) return ReadFailure::kTimeout;
    char chunk[65536];
    ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return ReadFailure::kEof;
    if (n < 0) return ReadFailure::kIo;
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

namespace {

// {"id": null, "error": {…}}: the error, else nothing.
std::optional<RpcError> connection_error(const std::string& line) {
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  if (!o || !o->contains("id") || !o->at("id").is_null() || !o->contains("error")) return std::nullopt;
  return RpcError::from_json(o->at("error"));
}

}  // namespace

boost::system::result<json::value, RpcError> SyncClient::call(std::string_view method, const json::value& params,
                                                              std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  std::int64_t number = next_id_++;
  json::value id = number;
  struct InFlight {
    std::atomic<std::int64_t>& slot;
    ~InFlight() { slot = 0; }
  } in_flight{in_flight_};
  bool written = false;
  if (write_mutex_) {
    // The id is in flight from the moment its request is written, under the lock that a cancel
    // takes too: a cancel either comes after the whole request or finds nothing to cancel.
    std::lock_guard lock(*write_mutex_);
    written = write_locked(proto::serialize_request(id, method, params) + "\n");
    if (written) in_flight_ = number;
  }
  if (!written) {
    // A daemon that refused this connection wrote why before it closed: that line is the answer.
    if (auto line = read_line(std::chrono::milliseconds(100))) {
      if (auto e = connection_error(*line)) return std::move(*e);
    }
    return RpcError::make(ErrorCode::kInternal, proto::kind::kDisconnected,
                          "the daemon closed the connection before " + std::string(method) + " was sent");
  }
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto line = read_line(std::max(left, std::chrono::milliseconds(0)));
    if (!line) {
      if (line.error() == ReadFailure::kTimeout) {
        return RpcError::make(
            ErrorCode::kInternal, proto::kind::kTimeout,
            "the daemon did not answer " + std::string(method) + " within " + std::to_string(timeout.count()) + " ms");
      }
      return RpcError::make(ErrorCode::kInternal, proto::kind::kDisconnected,
                            "the daemon closed the connection during " + std::string(method) + " (" +
                                (line.error() == ReadFailure::kEof ? "end of stream" : "read error") + ")");
    }
    auto msg = proto::parse_message(*line);
    if (!msg) {
      // An error with a null id is about the connection, not one request (the daemon refusing a
      // client at its descriptor limit): it answers the call that waits. Other lines are not
      // ours to judge; the daemon's own lines are well formed.
      if (auto e = connection_error(*line)) return std::move(*e);
      continue;
    }
    if (auto* note = std::get_if<proto::Notification>(&*msg)) {
      if (on_notification_) on_notification_(note->method, note->params);
      continue;
    }
    if (auto* req = std::get_if<proto::Request>(&*msg)) {
      answer(*req);
      continue;
    }
    if (auto* resp = std::get_if<proto::Response>(&*msg); resp && resp->id == id) {
      if (resp->ok) return std::move(resp->result);
      return std::move(resp->error);
    }
  }
}

void SyncClient::answer(const proto::Request& req) {
  std::string line;
  if (!on_request_) {
    line = proto::serialize_error(req.id, RpcError::make(ErrorCode::kMethodNotFound, proto::kind::kMethodNotFound,
                                                         "this client does not answer " + req.method));
  } else if (auto r = on_request_(req.method, req.params)) {
    line = proto::serialize_result(req.id, *r);
  } else {
    line = proto::serialize_error(req.id, r.error());
  }
  write_raw(line + "\n");
}

bool SyncClient::send(std::string_view method, const json::value& params) {
  if (!write_mutex_) return false;
  std::lock_guard lock(*write_mutex_);
  return write_locked(proto::serialize_request(json::value(next_id_++), method, params) + "\n");
}

bool SyncClient::cancel_in_flight() {
  if (!write_mutex_) return false;
  std::lock_guard lock(*write_mutex_);
  std::int64_t id = in_flight_.load();
  if (id == 0) return false;
  return write_locked(proto::serialize_notification(proto::kCancelRequest, json::object{{"id", id}}) + "\n");
}

}  // namespace oppx
