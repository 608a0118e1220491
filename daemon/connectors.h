// The daemon's shared connectors (scopes user and project, daemon/connector_scope.h): the user's
// mcp.json and each repository's .mcp.json, read (again, when they changed) on a client's request;
// one Connector per definition (and repository root for a repository's), shared by every client
// and started in parallel, with the environment ConnectorEnv gives it; the consent a repository's
// connectors wait for; the JSON the mcp/… methods answer with; the tool-list cache and the
// subscribers told of every change. Headers and env values are masked in everything it returns.
#pragma once

#include "daemon/connector.h"
#include "daemon/connector_env.h"
#include "daemon/consent.h"
#include "daemon/mcp_config.h"
#include "daemon/oauth.h"
#include "daemon/subscriptions.h"
#include "daemon/tools_cache.h"
#include "daemon/worker.h"
#include "proto/mcp_results.h"

#include <boost/json/object.hpp>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace oppx::daemon {

// Inode, size and mtime of a file (and of its target, when it is a symlink); zero when missing.
struct FileStamp {
  std::array<long long, 5> at{}, target{};
  bool operator==(const FileStamp&) const = default;
};

class Connectors {
 public:
  Connectors(boost::asio::io_context& io, std::string state_dir);
  ~Connectors();

  // Whether a request may restart a connector whose variable has another value in its
  // environment: a read-only one (list, get, tools) never does.
  using Restart = ConnectorEnv::Restart;
  // Re-reads the user's connectors file, and the .mcp.json of repository `root` (empty: none),
  // when they changed since the last look, with the asking client's environment: new and changed
  // definitions start (a repository's only once approved), removed ones stop. With kMay, a
  // running connector also restarts when `env` sets a variable its definition reads to another
  // value than the one it started with (a variable `env` lacks changes nothing), once no call is
  // open on it: until then it counts as starting, so new calls wait for the restart. At daemon
  // start: the daemon's own environment.
  void refresh(const EnvMap& env, const std::string& root, Restart restart);
  // The daemon wrote a connectors file: the next refresh looks again, even in this turn.
  void file_written() { ++turn_; }
  // Runs `fn` once no connector of `root` (or the one named) is still starting.
  void when_settled(const std::string& root, const std::string& name, std::function<void()> fn);
  void reconnect(const std::string& name, const EnvMap& env, const std::string& root);  // empty name: all

  proto::McpListResult list(const std::string& root) const;
  // The connector `name` as `root` sees it (the user's wins), with the repository's one it hides.
  // as_written: values unmasked, as written in the file (never expanded).
  std::optional<proto::ConnectorEntry> get(const std::string& name, const std::string& root,
                                           bool as_written = false) const;
  // Its tools; while it is starting with none yet, or idle, the list cached for its definition, if any.
  const boost::json::array& tools_of(const Connector& c, bool* cached) const;
  // The pages of a connector's resources/list, resources/templates/list or prompts/list (`method`)
  // as last read, kept until its server says a list changed or a new session begins; null when none.
  const boost::json::array* offers(const Connector& c, const std::string& method) const;
  // Kept only when no change was announced since `epoch` (offers_epoch before the reading began).
  void keep_offers(const Connector& c, const std::string& method, boost::json::array list, std::uint64_t epoch);
  std::uint64_t offers_epoch(const Connector& c) const;
  // A lazy connector not started yet ("lazy": true, with a tool list cached for its definition).
  bool is_idle(const Connector& c) const;
  // Starts an idle connector for a call, with the calling client's environment; nothing otherwise.
  void wake(Connector& c, const EnvMap& env);
  Subscriptions& subscriptions() { return subscriptions_; }
  std::shared_ptr<Connector> find(const std::string& name, const std::string& root) const;
  std::size_t size() const;
  std::size_t calls_waiting() const;  // of every connector: mcp/list's requests_waiting summed
  void stop_all();

  // Consent for the repository connector (root, name), for exactly the definition with `sha256`.
  // Errors: "unknown_connector", "not_a_project_connector", "hidden", "changed", "io".
  struct ConsentError {
    std::string kind, message;
  };
  // `shown_files`: the files it runs with their sha256 as the user was shown them (mcp/get
  // "files"); one that differs now is refused as "changed". Without them, the files as they are now.
  // `done` once the decision is written (on the worker) and applied (the connector starts or stops).
  using Decided = std::function<void(boost::system::result<void, ConsentError>)>;
  void decide(const std::string& root, const std::string& name, const std::string& sha256, bool approve,
              const EnvMap& env, const std::optional<FileHashes>& shown_files, Decided done);
  // The files of repository `root` that `def` runs (files_it_runs) and their sha256: a file is read
  // again only when its stamp changed since it was last read, or always with `fresh` (an approval,
  // a start), so that what starts is what was approved.
  FileHashes run_files(const ConnectorDef& def, const std::string& root, bool fresh) const;
  ConsentStore& consent() { return consent_; }
  // The daemon's thread for blocking work (worker.h), for the other stores that write through it.
  Worker& worker() { return worker_; }
  // The OAuth logins of the connectors that log in (daemon/oauth.h).
  OAuth& oauth() { return *oauth_; }
  // The URL connector `c` was (or will be) started with, expanded for its last client; empty when
  // a variable of it is unset.
  std::string url_of(const Connector& c) const;
  // Where the user's connectors file is for this client (the last one read).
  const std::string& user_config_path() const { return user_.path; }

 private:
  // One connectors file: the user's, or one repository's.
  struct Source {
    std::string path;
    FileStamp stamp;                 // of what was read last
    std::uint64_t checked_turn = 0;  // the loop turn it was last looked at
    std::string error;
    std::vector<std::string> warnings;
    std::vector<ConnectorDef> defs;                                // as read, in file order
    std::map<std::string, std::shared_ptr<Connector>> connectors;  // by name
    std::uint64_t user_generation = 0;  // a repository's: the user's set its hiding was worked out against
  };
  bool reread(Source& src, const std::string& path, bool is_user);
  // The user's decision on a repository's connector, and what changed in the files it runs when
  // the definition is approved but a file is not as approved (then the decision is kChanged).
  struct Verdict {
    Consent decision = Consent::kNone;
    std::string file_change;
  };
  Verdict consent_of(const ConnectorDef& def, const std::string& root, bool fresh) const;
  // Why a repository's connector may not start now; empty when it may.
  std::string held_because(const ConnectorDef& def, const std::string& root, bool fresh) const;
  void replace_connectors(Source& src, const std::string& root);
  void apply_consent(const std::string& root, Source& repo, const EnvMap& env);
  // as_written: values as the file has them (unexpanded), for a user who asked to review them.
  proto::ConnectorEntry entry(const ConnectorDef& d, const Connector* c, const std::string& root,
                              const std::string& file, bool as_written = false) const;
  // A program's stderr log; an HTTP connector has no program, and the daemon's log (where its
  // failures are logged) stands in for it in its steps.
  std::string log_path(const ConnectorDef& def, const std::string& root) const;
  void settled_check();
  bool starting(const std::string& root, const std::string& name) const;  // empty name: any of them
  void restart_changed(Source& src, const EnvMap& env, Restart restart);
  void adopt(const std::shared_ptr<Connector>& c, const std::string& root);
  void idle(Connector& c);  // its last open call ended
  void changed(const Connector& c);
  void removed(Connector& c, bool gone);
  std::string source_path(const std::string& root) const;  // the file a connector of `root` is from

  // What was last told about a connector, and its repository root (empty: the user's).
  struct Seen {
    std::string root;
    std::string state;  // state and reason
    std::string tools;  // hash of the last running tool list
    bool idle = false;  // lazy, not started yet: its cached list is offered, the first call starts it
  };

  boost::asio::io_context& io_;
  Worker worker_;  // before the stores that write through it
  std::string state_dir_;
  Source user_;
  std::uint64_t turn_ = 1;  // turns of the event loop in which a file was looked at
  bool turn_posted_ = false;
  std::uint64_t user_generation_ = 0;    // bumps whenever the user's set changes
  std::map<std::string, Source> repos_;  // by repository root
  mutable ConsentStore consent_;         // reading it may move a bad file aside
  // The files repository connectors run: the stamp each had when it was last read, and its sha256.
  mutable std::map<std::string, std::pair<FileStamp, std::string>> file_hashes_;
  struct Waiter {
    std::string root, name;
    std::function<void()> fn;
  };
  std::vector<Waiter> waiters_;
  ToolsCache cache_;
  Subscriptions subscriptions_;
  std::map<const Connector*, Seen> seen_;  // erased when the connector is removed
  std::map<const Connector*, std::map<std::string, boost::json::array>> offers_;  // likewise
  std::map<const Connector*, std::uint64_t> offers_epochs_;                       // likewise
  ConnectorEnv envs_;             // the environment each one started with
  std::unique_ptr<OAuth> oauth_;  // before the connectors go (stop_all) it stays
  LinkFactory link_factory();
  void logged_in(const std::string& name);  // starts the connectors of that name waiting for it
};

}  // namespace oppx::daemon
