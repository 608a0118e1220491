// StatusWaits: the open waits by id, each with its deadline timer; a common/changes.h listener
// only while one is open (so the daemon's busy paths pay nothing otherwise), which posts one look
// at a time however many signals come before it runs.
#include "daemon/status_waits.h"

#include "common/changes.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/value_from.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>

namespace oppx::daemon {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

// Every field of `until` as the status has it (the decoder let only kStatusWaitFields through).
bool holds(const std::map<std::string, json::value, std::less<>>& until, const json::object& status) {
  for (auto& [field, want] : until) {
    const json::value* have = status.if_contains(field);
    if (!have || *have != want) return false;
  }
  return true;
}

}  // namespace

struct StatusWaits::Impl : std::enable_shared_from_this<StatusWaits::Impl> {
  struct Wait {
    std::map<std::string, json::value, std::less<>> until;
    std::optional<Reply> reply;
    std::unique_ptr<asio::steady_timer> deadline;
  };

  Impl(asio::io_context& io, Snapshot snapshot) : io(io), snapshot(std::move(snapshot)) {}

  asio::io_context& io;
  Snapshot snapshot;
  std::map<std::uint64_t, Wait> waits;
  std::uint64_t next_id = 1;
  std::atomic<bool> look_posted{false};
  std::optional<changes::Listener> listener;  // last: it goes first, before what it reaches

  void finish(std::uint64_t id, bool met, const proto::StatusResult& status) {
    auto it = waits.find(id);
    if (it == waits.end()) return;
    Wait w = std::move(it->second);
    waits.erase(it);
    if (waits.empty()) listener.reset();
    w.deadline->cancel();
    proto::StatusResult s = status;
    s.until_met = met;
    w.reply->ok(json::value_from(s));
  }

  void look() {
    look_posted = false;
    if (waits.empty()) return;
    proto::StatusResult s = snapshot();
    json::object now = json::value_from(s).as_object();
    std::vector<std::uint64_t> met;
    for (auto& [id, w] : waits)
      if (holds(w.until, now)) met.push_back(id);
    for (auto id : met) finish(id, true, s);
  }

  // From any thread (common/changes.h): one look posted at a time.
  void signalled() {
    if (look_posted.exchange(true)) return;
    asio::post(io, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->look();
    });
  }
};

StatusWaits::StatusWaits(asio::io_context& io, Snapshot snapshot)
    : impl_(std::make_shared<Impl>(io, std::move(snapshot))) {}

// The daemon is going away (what the snapshot reads may be gone already): no status to give.
StatusWaits::~StatusWaits() {
  impl_->listener.reset();
  auto waits = std::move(impl_->waits);
  for (auto& [id, w] : waits) {
    w.deadline->cancel();
    w.reply->fail(proto::RpcError::make(proto::ErrorCode::kShuttingDown, proto::kind::kShuttingDown,
                                        "the daemon is shutting down; run the command again to start a new one"));
  }
}

std::size_t StatusWaits::open() const { return impl_->waits.size(); }

void StatusWaits::answer(const proto::StatusParams& p, Reply reply) {
  Impl& m = *impl_;
  if (p.until.empty()) return reply.ok(json::value_from(m.snapshot()));
  // Listening before the first look: a change from another thread in between is not missed.
  if (!m.listener) m.listener.emplace([raw = &m] { raw->signalled(); });
  proto::StatusResult s = m.snapshot();
  if (holds(p.until, json::value_from(s).as_object())) {
    if (m.waits.empty()) m.listener.reset();
    s.until_met = true;
    return reply.ok(json::value_from(s));
  }
  std::uint64_t id = m.next_id++;
  std::weak_ptr<Impl> weak = impl_;
  reply.on_cancel([weak, id] {
    auto self = weak.lock();
    if (!self) return;
    self->waits.erase(id);  // its Reply, cancelled, sends nothing
    if (self->waits.empty()) self->listener.reset();
  });
  Impl::Wait& w = m.waits[id];
  w.until = p.until;
  w.reply.emplace(std::move(reply));
  w.deadline = std::make_unique<asio::steady_timer>(m.io, std::chrono::milliseconds(p.timeout_ms));
  w.deadline->async_wait([weak, id](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    self->finish(id, false, self->snapshot());
  });
}

}  // namespace oppx::daemon
