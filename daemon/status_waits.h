// The daemon/status requests that wait (`until`, docs/protocol.md): each is answered once every
// field it names has its value, or at its deadline with until_met false. They are looked at again
// after each common/changes.h signal, in a handler posted to the loop, so the change that
// signalled is complete (a client's socket is closed before it stops being counted); no timer
// polls. Loop thread only, except the signal, which may come from any thread and only posts.
#pragma once

#include "common/jsonrpc_peer.h"
#include "proto/daemon_api.h"

#include <functional>
#include <memory>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

class StatusWaits {
 public:
  using Snapshot = std::function<proto::StatusResult()>;  // the status as it is now
  StatusWaits(boost::asio::io_context& io, Snapshot snapshot);
  ~StatusWaits();  // fails the waits still open: the daemon is shutting down
  StatusWaits(const StatusWaits&) = delete;
  StatusWaits& operator=(const StatusWaits&) = delete;

  // Without `until`: the status now. With it: now when it holds, else once it does or at
  // p.timeout_ms. A caller that goes away or cancels ($/cancelRequest) ends its wait.
  void answer(const proto::StatusParams& p, Reply reply);
  std::size_t open() const;  // waits not answered yet

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace oppx::daemon
