// The loopback listener an OAuth login's redirect comes back to (RFC 8252 §7.3): the user's
// browser is sent to http://127.0.0.1:<port>/callback?code=…&state=…, and the query goes to the
// login, which says what page the browser shows. It listens on 127.0.0.1 only, reads at most one
// small request per connection within a few seconds, and closes once the login has its answer
// or is dropped. Runs on the daemon's io_context; nothing blocks.
#pragma once

#include <boost/system/result.hpp>

#include <functional>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

class CallbackListener {
 public:
  // What a request to /callback is answered: the words of the page, and whether the login has
  // its answer (the listener then closes).
  struct Page {
    bool done = false;
    std::string title, text;
  };
  using OnCallback = std::function<Page(const std::string& query)>;

  // Listens on 127.0.0.1:`port` (0: a free one the system picks). Fails with why (the port is
  // taken, naming it).
  static boost::system::result<std::shared_ptr<CallbackListener>, std::string> listen(boost::asio::io_context& io,
                                                                                      int port, OnCallback on_callback);
  ~CallbackListener();
  int port() const;
  std::string redirect_uri() const;  // http://127.0.0.1:<port>/callback
  void close();

  struct Impl;

 private:
  explicit CallbackListener(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace oppx::daemon
