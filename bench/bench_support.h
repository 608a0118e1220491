// What the benchmarks share: a private temporary HOME (so a benchmark never touches the user's
// daemon or files), running a program and timing it, percentiles of a series of timings, and the
// rows of bench/run's report.
#pragma once

#include "common/sync_client.h"

#include <boost/json/object.hpp>

#include <optional>
#include <string>
#include <vector>

namespace oppx::bench {

// The folder of the running executable (build/): oppx, oppxd and the helpers sit there.
std::string self_dir();

// A temp folder standing in for HOME with XDG_* under it; removed by the destructor.
class BenchHome {
 public:
  BenchHome();
  ~BenchHome();
  BenchHome(const BenchHome&) = delete;
  BenchHome& operator=(const BenchHome&) = delete;
  const std::string& root() const { return root_; }
  std::string socket() const { return root_ + "/run/oppx/oppxd.sock"; }
  bool ok() const { return !root_.empty(); }

 private:
  std::string root_;
};

// The null-terminated pointers exec and posix_spawn take, into `args` (which must outlive them).
std::vector<char*> c_argv(const std::vector<std::string>& args);

// Runs argv with stdout and stderr to /dev/null; the wall time in ms, or -1 when it failed.
double run_ms(const std::vector<std::string>& args);

struct Stats {
  double median = 0, p90 = 0, p99 = 0, min = 0;
  int failures = 0;
};
// Sorts `samples`; nearest-rank percentiles.
Stats summarize(std::vector<double> samples, int failures = 0);

// run_ms `runs` times.
Stats measure(const std::vector<std::string>& args, int runs);

// Runs argv with stderr to /dev/null and returns its stdout; empty when it failed to run or
// exited with a status other than 0.
std::string capture(const std::vector<std::string>& args);

// mcp.json of the bench's HOME, written whole (atomically) with `servers` as its mcpServers.
void write_config(const BenchHome& home, const boost::json::object& servers);
// `count` connectors of the C echo server (bench_echo_server beside this program): "echo",
// "echo2", … "echo<count>".
boost::json::object echo_servers(int count);
// A connection to the daemon that said hello with this process's environment (the daemon
// expands ${VAR} from it), as `client`; nullopt when it did not answer.
std::optional<SyncClient> daemon_client(const std::string& socket, const std::string& client);

// Starts the daemon (`oppx daemon start`), then waits (mcp/list with wait) until none of its
// connectors is starting; the number running, or -1 when the daemon did not answer.
int running_connectors(const std::string& oppx, const std::string& socket);

// One row of the report bench/run writes (docs/performance.md): appended as a JSON line to the
// file $OPPX_BENCH_REPORT names; nothing when it is unset. `anchor` is what the figure is
// compared with in the same run (its median in the same unit), "" when nothing is.
struct ReportRow {
  std::string bench, what, unit;
  Stats stats;
  std::string anchor;
  double anchor_median = 0;
  std::string note;  // e.g. a target and whether it was met
};
void report(const ReportRow& row);

}  // namespace oppx::bench
